package javapeer

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// KnownVersions are the Redisson versions the peer is built against (integration/java/versions,
// newest first): JarPath(t, "3.17.7") is integration/java/target/peer-3.17.7.jar.
var KnownVersions = []string{"4.7.0", "3.52.0", "3.36.0", "3.27.2", "3.23.5", "3.17.7"}

// Feature is a part of Redisson that versions before Since lack (facts read in Redisson's
// sources at each release tag).
type Feature struct {
	Probe string // the name the peer's "features" command gives it; "" for a behaviour no method shows
	What  string // what it is, for skip messages
	Since string // the first Redisson version that has it
}

// The features the interop tests depend on that not every known version has.
var (
	FencedLock = Feature{"fenced", "RFencedLock", "3.19.0"}
	// NonReentrantLock is getNonReentrantLock.
	NonReentrantLock = Feature{"nonreentrant", "a non-reentrant lock (getNonReentrantLock)", "4.4.0"}
	// ExpirableSemaphoreMulti is acquiring and releasing several permits of an
	// RPermitExpirableSemaphore per call (acquire(int, …), release(List)), and its
	// getPermits and acquiredPermits.
	ExpirableSemaphoreMulti = Feature{"xsem-multi", "RPermitExpirableSemaphore.acquire(int, …) (several permits per call)", "3.23.4"}
	// ExpirableSemaphoreLeaseTime is RPermitExpirableSemaphore.getLeaseTime(String).
	ExpirableSemaphoreLeaseTime = Feature{"xsem-lease", "RPermitExpirableSemaphore.getLeaseTime(String)", "3.41.0"}
	// ShardedSubscriptionMode is ClusterServersConfig.shardedSubscriptionMode (AUTO, ON, OFF).
	ShardedSubscriptionMode = Feature{"sharded-mode", "ClusterServersConfig.shardedSubscriptionMode", "3.29.0"}
	// ShardedPubSub: in cluster mode, a Redisson that finds SPUBLISH on the nodes subscribes
	// with SSUBSCRIBE and publishes with SPUBLISH (before 3.29.0 always; from 3.29.0 in AUTO
	// and ON). Older versions subscribe and publish classic only.
	ShardedPubSub = Feature{"", "sharded pub/sub for its locks in cluster mode", "3.22.0"}
	// UnlockLatch: the unlock scripts write redisson_unlock_latch:{name}:<request id>.
	UnlockLatch = Feature{"", "unlock latch keys", "3.24.0"}
	// GroupIsHeld: RedissonMultiLock.isHeldByCurrentThread (and so RedissonRedLock's) answers
	// whether every member is held; before, it throws UnsupportedOperationException.
	GroupIsHeld = Feature{"", "RedissonMultiLock.isHeldByCurrentThread", "3.27.2"}
	// FairQueuedPTTL: the fair lock's acquire, for a waiter already queued, replies
	// max(0, PTTL of the lock); before, its queue deadline minus the thread-wait time and now.
	FairQueuedPTTL = Feature{"", "the fair lock's max(0, PTTL) reply to a queued waiter", "3.32.0"}
)

// probedFeatures are the peer's "features" names, in its order, each with the first version
// that has it ("" for every known version).
var probedFeatures = []Feature{
	{"lock", "RLock", ""},
	{"fair", "the fair lock", ""},
	{"readwrite", "the read-write lock", ""},
	{"spin", "the spin lock", ""},
	FencedLock,
	NonReentrantLock,
	{"latch", "RCountDownLatch", ""},
	{"semaphore", "RSemaphore", ""},
	{"xsem", "RPermitExpirableSemaphore", ""},
	ExpirableSemaphoreMulti,
	ExpirableSemaphoreLeaseTime,
	{"multilock", "RedissonMultiLock", ""},
	{"redlock", "RedissonRedLock", ""},
	ShardedSubscriptionMode,
}

// ExpectedFeatures is what the peer built against version answers to "features".
func ExpectedFeatures(version string) string {
	var names []string
	for _, f := range probedFeatures {
		if Has(version, f) {
			names = append(names, f.Probe)
		}
	}
	return strings.Join(names, ",")
}

// Has reports whether Redisson version has f.
func Has(version string, f Feature) bool {
	return f.Since == "" || compareVersions(version, f.Since) >= 0
}

// Need skips t, by name, unless Redisson version has f.
func Need(t testing.TB, version string, f Feature) {
	t.Helper()
	if !Has(version, f) {
		t.Skipf("Redisson %s has no %s (since %s)", version, f.What, f.Since)
	}
}

// Bug is a known Redisson bug, present in the versions From to To, both included.
type Bug struct {
	What     string
	From, To string
}

// ReadLockRenewal: Redisson 3.44.0–3.52.0's read-lock renewal (renewal.ReadLockTask) reuses
// its outer loop variable i in its inner loop over hold counts, so for a reader holding the
// read lock more than once it extends the wrong timeout keys or fails with a Lua error, and
// the batch it renews lapses. 4.x rewrote the script.
var ReadLockRenewal = Bug{"read-lock renewal bug (ReadLockTask reuses its loop variable)", "3.44.0", "3.52.0"}

// ShardingDetection: Redisson 3.27.0–3.28.0 decide between sharded and classic pub/sub in
// cluster mode with one SPUBLISH to the first master they list, on slot 0's channel: unless
// that master serves slot 0 it refuses (MOVED), and the client subscribes and publishes
// classic only. Which kind a peer uses then depends on the order of its masters.
var ShardingDetection = Bug{"sharded pub/sub detection bug (one SPUBLISH to the first master listed)", "3.27.0", "3.28.0"}

// In reports whether version has b.
func (b Bug) In(version string) bool {
	return compareVersions(version, b.From) >= 0 && compareVersions(version, b.To) <= 0
}

// Avoid skips t, by name, when Redisson version has b.
func Avoid(t testing.TB, version string, b Bug) {
	t.Helper()
	if b.In(version) {
		t.Skipf("Redisson %s has the %s (%s–%s)", version, b.What, b.From, b.To)
	}
}

// compareVersions compares dotted numeric versions ("3.17.7" < "3.52.0" < "4.7.0").
func compareVersions(a, b string) int {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(pa) || i < len(pb); i++ {
		na, nb := versionPart(pa, i), versionPart(pb, i)
		if na != nb {
			if na < nb {
				return -1
			}
			return 1
		}
	}
	return 0
}

func versionPart(parts []string, i int) int {
	if i >= len(parts) {
		return 0
	}
	n, err := strconv.Atoi(parts[i])
	if err != nil {
		panic(fmt.Sprintf("javapeer: version part %q is not a number", parts[i]))
	}
	return n
}
