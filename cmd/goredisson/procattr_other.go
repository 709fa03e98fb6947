//go:build !linux

package main

import "syscall"

// childAttr: outside Linux, workers keep the default attributes (no parent-death signal).
func childAttr() *syscall.SysProcAttr { return nil }
