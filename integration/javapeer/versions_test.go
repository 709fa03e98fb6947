package javapeer

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestKnownVersionsAreBuilt: the Go list of versions is the one the build reads.
func TestKnownVersionsAreBuilt(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(JavaDir(), "versions"))
	if err != nil {
		t.Fatal(err)
	}
	var built []string
	for _, line := range strings.Split(string(b), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			built = append(built, line)
		}
	}
	if !slices.Equal(built, KnownVersions) {
		t.Fatalf("integration/java/versions lists %v; KnownVersions is %v", built, KnownVersions)
	}
}

func TestCompareVersions(t *testing.T) {
	cases := []struct {
		a, b string
		want int
	}{
		{"3.17.7", "3.19.0", -1},
		{"3.19.0", "3.19.0", 0},
		{"3.52.0", "3.9.0", 1},
		{"4.7.0", "3.52.0", 1},
		{"3.23.4", "3.23.5", -1},
		{"4.4", "4.4.0", 0},
	}
	for _, c := range cases {
		if got := compareVersions(c.a, c.b); got != c.want {
			t.Errorf("compareVersions(%s, %s) = %d; want %d", c.a, c.b, got, c.want)
		}
	}
}

func TestFeaturesAndBugs(t *testing.T) {
	if Has("3.17.7", FencedLock) || !Has("3.19.0", FencedLock) || !Has("4.7.0", FencedLock) {
		t.Error("FencedLock: want from 3.19.0 on")
	}
	if got, want := ExpectedFeatures("3.17.7"), "lock,fair,readwrite,spin,latch,semaphore,xsem,multilock,redlock"; got != want {
		t.Errorf("ExpectedFeatures(3.17.7) = %s; want %s", got, want)
	}
	for v, want := range map[string]bool{"3.43.0": false, "3.44.0": true, "3.52.0": true, "4.7.0": false} {
		if ReadLockRenewal.In(v) != want {
			t.Errorf("ReadLockRenewal.In(%s) = %v; want %v", v, !want, want)
		}
	}
}
