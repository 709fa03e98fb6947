package main

import "syscall"

// childAttr puts a child (a worker or redis-server) in its own process group, so that a
// Ctrl-C in the terminal reaches only this process, which then stops its children in
// order; and has the kernel kill the child if this process dies without doing so.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
