package keys

import "testing"

func TestTaggedNames(t *testing.T) {
	cases := []struct{ name, channel, latch, token string }{
		{"order:42", "redisson_lock__channel:{order:42}", "redisson_unlock_latch:{order:42}:abc", "redisson_lock_token:{order:42}"},
		{"{user}:1", "redisson_lock__channel:{user}:1", "redisson_unlock_latch:{user}:1:abc", "redisson_lock_token:{user}:1"},
		{"a{b", "redisson_lock__channel:a{b", "redisson_unlock_latch:a{b:abc", "redisson_lock_token:a{b"},
	}
	for _, c := range cases {
		if got := LockChannel(c.name); got != c.channel {
			t.Errorf("LockChannel(%q) = %q, want %q", c.name, got, c.channel)
		}
		if got := UnlockLatch(c.name, "abc"); got != c.latch {
			t.Errorf("UnlockLatch(%q) = %q, want %q", c.name, got, c.latch)
		}
		if got := FencingToken(c.name); got != c.token {
			t.Errorf("FencingToken(%q) = %q, want %q", c.name, got, c.token)
		}
	}
}

func TestSynchronizerChannels(t *testing.T) {
	cases := []struct{ name, latch, semaphore, timeouts string }{
		{"job:7", "redisson_countdownlatch__channel__{job:7}", "redisson_sc:{job:7}", "{job:7}:timeout"},
		{"{user}:1", "redisson_countdownlatch__channel__{{user}:1}", "redisson_sc:{user}:1", "{user}:1:timeout"},
	}
	for _, c := range cases {
		if got := PermitTimeouts(c.name); got != c.timeouts {
			t.Errorf("PermitTimeouts(%q) = %q, want %q", c.name, got, c.timeouts)
		}
		if Slot(PermitTimeouts(c.name)) != Slot(c.name) {
			t.Errorf("PermitTimeouts(%q) is not in the slot of the semaphore", c.name)
		}
		if got := LatchChannel(c.name); got != c.latch {
			t.Errorf("LatchChannel(%q) = %q, want %q", c.name, got, c.latch)
		}
		if got := SemaphoreChannel(c.name); got != c.semaphore {
			t.Errorf("SemaphoreChannel(%q) = %q, want %q", c.name, got, c.semaphore)
		}
	}
}

func TestSlot(t *testing.T) {
	// Values from CLUSTER KEYSLOT on Redis 7.0.
	cases := map[string]uint16{
		"":                     0,
		"foo":                  12182,
		"123456789":            12739,
		"{user1000}.following": 3443,
		"{user1000}.followers": 3443,
		"foo{}{bar}":           8363,
		"foo{{bar}}zap":        4015,
		"foo{bar}{zap}":        5061,
	}
	for k, want := range cases {
		if got := Slot(k); got != want {
			t.Errorf("Slot(%q) = %d, want %d", k, got, want)
		}
	}
}

func TestSlotSharedByLockKeys(t *testing.T) {
	for _, name := range []string{"order:42", "{tag}:x", "plain"} {
		s := Slot(name)
		if Slot(LockChannel(name)) != s || Slot(UnlockLatch(name, "0123")) != s {
			t.Errorf("keys of %q are not all in slot %d", name, s)
		}
	}
}

func TestFairNames(t *testing.T) {
	const f = "6f1c2a9e-3b7d-4c1e-9a55-0d2f8e4b7c11:57"
	cases := []struct{ name, queue, timeout, waiter string }{
		{"order:42", "redisson_lock_queue:{order:42}", "redisson_lock_timeout:{order:42}", "redisson_lock__channel:{order:42}:" + f},
		{"{user}:1", "redisson_lock_queue:{user}:1", "redisson_lock_timeout:{user}:1", "redisson_lock__channel:{user}:1:" + f},
	}
	for _, c := range cases {
		if got := FairQueue(c.name); got != c.queue {
			t.Errorf("FairQueue(%q) = %q, want %q", c.name, got, c.queue)
		}
		if got := FairTimeout(c.name); got != c.timeout {
			t.Errorf("FairTimeout(%q) = %q, want %q", c.name, got, c.timeout)
		}
		if got := FairWaiterChannel(c.name, f); got != c.waiter {
			t.Errorf("FairWaiterChannel(%q) = %q, want %q", c.name, got, c.waiter)
		}
		s := Slot(c.name)
		if Slot(c.queue) != s || Slot(c.timeout) != s || Slot(c.waiter) != s {
			t.Errorf("fair keys of %q are not all in slot %d", c.name, s)
		}
	}
}

func TestReadWriteNames(t *testing.T) {
	cases := []struct{ name, channel, prefix string }{
		{"doc:1", "redisson_rwlock:{doc:1}", "{doc:1}:c:7:rwlock_timeout"},
		{"{user}:1", "redisson_rwlock:{user}:1", "{user}:1:c:7:rwlock_timeout"},
	}
	for _, c := range cases {
		if got := ReadWriteChannel(c.name); got != c.channel {
			t.Errorf("ReadWriteChannel(%q) = %q, want %q", c.name, got, c.channel)
		}
		if got := ReadTimeoutPrefix(c.name, "c:7"); got != c.prefix {
			t.Errorf("ReadTimeoutPrefix(%q) = %q, want %q", c.name, got, c.prefix)
		}
		if Slot(ReadWriteChannel(c.name)) != Slot(c.name) || Slot(ReadTimeoutPrefix(c.name, "c:7")+":1") != Slot(c.name) {
			t.Errorf("keys of %q are not in its slot", c.name)
		}
	}
}
