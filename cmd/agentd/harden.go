package main

import "golang.org/x/sys/unix"

// harden makes the daemon's process non-dumpable. A process of its uid (a program run
// with [shell] sandbox = "none", or any other of that user) then can neither read
// /proc/<agentd>/environ, mem or fd, where the bots' and the API's tokens are, nor ptrace
// it, and no core dump holding them is written. Its children are unaffected: exec resets it.
func harden() error {
	return unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
}

// dumpable reports the flag harden clears.
func dumpable() (bool, error) {
	v, err := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0)
	return v != 0, err
}
