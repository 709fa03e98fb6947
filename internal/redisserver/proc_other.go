//go:build !linux

package redisserver

import (
	"context"
	"errors"
	"fmt"
	"syscall"
)

// childAttr: outside Linux, a server keeps the default attributes (no parent-death signal).
func childAttr() *syscall.SysProcAttr { return nil }

// Pause is supported on Linux only; elsewhere it returns an error wrapping
// [errors.ErrUnsupported].
func (p *Process) Pause(context.Context) error {
	return fmt.Errorf("pause %s: %w", p.Program(), errors.ErrUnsupported)
}

// Resume is supported on Linux only; elsewhere it returns an error wrapping
// [errors.ErrUnsupported].
func (p *Process) Resume(context.Context) error {
	return fmt.Errorf("resume %s: %w", p.Program(), errors.ErrUnsupported)
}
