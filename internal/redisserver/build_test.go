package redisserver

import "testing"

func TestParseVersionOutput(t *testing.T) {
	for out, want := range map[string]Build{
		"Redis server v=7.0.15 sha=00000000:0 malloc=jemalloc-5.3.0 bits=64 build=8d4d0dbad7b0a71e\n": {"Redis", "7.0.15"},
		"Redis server v=6.2.14 sha=40305114:0 malloc=libc bits=64 build=dff95a8e7a99d269":             {"Redis", "6.2.14"},
		"Valkey server v=8.1.8 sha=00000000:1 malloc=libc bits=64 build=7eb4ebc9d7e91f4e":             {"Valkey", "8.1.8"},
	} {
		if got, err := ParseVersionOutput(out); err != nil || got != want {
			t.Errorf("ParseVersionOutput(%q) = %v, %v; want %v", out, got, err, want)
		}
	}
	if _, err := ParseVersionOutput("faketime: not found"); err == nil {
		t.Error("ParseVersionOutput of other output: no error")
	}
}

func TestParseInfoServer(t *testing.T) {
	valkey := "# Server\r\nredis_version:7.2.4\r\nserver_name:valkey\r\nvalkey_version:8.1.8\r\n"
	if got, err := ParseInfoServer(valkey); err != nil || got != (Build{"Valkey", "8.1.8"}) {
		t.Errorf("Valkey's INFO: %v, %v", got, err)
	}
	if got, err := ParseInfoServer("# Server\r\nredis_version:6.2.14\r\n"); err != nil || got != (Build{"Redis", "6.2.14"}) {
		t.Errorf("Redis's INFO: %v, %v", got, err)
	}
}

func TestBuildBefore(t *testing.T) {
	for _, c := range []struct {
		b            Build
		major, minor int
		want         bool
	}{
		{Build{"Redis", "6.2.14"}, 7, 0, true},
		{Build{"Redis", "7.0.15"}, 7, 0, false},
		{Build{"Redis", "7.0.15"}, 7, 2, true},
		{Build{"Redis", "8.2.3"}, 7, 4, false},
		{Build{"Valkey", "8.1.8"}, 7, 2, false},
		{Build{"Valkey", "8.1.8"}, 9, 0, true},
	} {
		if got := c.b.Before(c.major, c.minor); got != c.want {
			t.Errorf("%v.Before(%d, %d) = %v, want %v", c.b, c.major, c.minor, got, c.want)
		}
	}
}
