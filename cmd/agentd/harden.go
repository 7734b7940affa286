package main

import (
	"math"

	"golang.org/x/sys/unix"
)

// harden makes the daemon's process non-dumpable. A process of its uid (a program run
// with [shell] sandbox = "none", or any other of that user) then can neither read
// /proc/<agentd>/environ, mem or fd, where the bots' and the API's tokens are, nor ptrace
// it, and no core dump holding them is written. Its children are unaffected: exec resets it.
//
// It also marks every descriptor the daemon inherited above stderr close-on-exec, so that
// none reaches a program it runs (an MCP server, git, a shell command) by accident.
func harden() error {
	if err := unix.CloseRange(3, math.MaxUint32, unix.CLOSE_RANGE_CLOEXEC); err != nil {
		return err
	}
	return unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
}
