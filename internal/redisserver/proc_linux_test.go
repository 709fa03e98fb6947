package redisserver

import (
	"os"
	"testing"
)

func TestProcState(t *testing.T) {
	st, err := procState(os.Getpid())
	if err != nil || (st != 'R' && st != 'S') {
		t.Fatalf("procState(self) = %c, %v; want R or S", st, err)
	}
}
