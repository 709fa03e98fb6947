package main

import "syscall"

// childAttr puts a worker process in its own process group, so that a Ctrl-C in the
// terminal reaches only this process, which then stops its workers in order; and has the
// kernel kill the worker if this process dies without doing so.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
