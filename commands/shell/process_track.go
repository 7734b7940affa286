package shell

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"os/exec"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// running are the pids of the programs this package started and has not reaped: the
// shells and bwraps of running commands. A tracked pid names our process and no other,
// since it is untracked before it is reaped.
var running struct {
	sync.Mutex
	pids map[int]bool
}

// startTracked starts cmd and tracks its pid under the lock CommandAncestor takes too: a
// program that has begun to run is never missed by a question asked meanwhile. It gets
// no descriptor of the daemon's but cmd's own (noInheritance).
func startTracked(cmd *exec.Cmd) error {
	running.Lock()
	defer running.Unlock()
	if err := noInheritance(); err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	if running.pids == nil {
		running.pids = map[int]bool{}
	}
	running.pids[cmd.Process.Pid] = true
	return nil
}

// noInheritance marks every descriptor of the daemon's above stderr close-on-exec. Go
// opens its own so, but one inherited from whatever started the daemon, or opened so by
// a library, would otherwise pass through bwrap into the program: a database, a socket or
// a log, open past every mount of the sandbox. cmd's own (Stdin..., ExtraFiles) are
// copied into place in the child, which clears the flag on the copies, so they still pass.
func noInheritance() error {
	if unix.CloseRange(3, math.MaxUint32, unix.CLOSE_RANGE_CLOEXEC) == nil {
		return nil
	}
	// Before Linux 5.11: one descriptor at a time, as /proc lists them.
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return fmt.Errorf("cannot keep the daemon's descriptors from the program: %w", err)
	}
	for _, e := range entries {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 {
			unix.FcntlInt(uintptr(fd), unix.F_SETFD, unix.FD_CLOEXEC) // the listing's own is gone: EBADF
		}
	}
	return nil
}

func untrack(pid int) {
	running.Lock()
	defer running.Unlock()
	delete(running.pids, pid)
}

func tracked(pid int) bool {
	running.Lock()
	defer running.Unlock()
	return running.pids[pid]
}

// maxAncestry bounds the walk up the parent chain: pid_max is 2^22, the chain is short.
const maxAncestry = 4096

// CommandAncestor reports whether pid is a program a command of this package is running,
// or a descendant of one, by walking its parents in /proc up to init. The local API asks
// it about each peer (SO_PEERCRED) to refuse agents' programs the daemon's own control.
//
// It fails closed: a chain it cannot read to the end (a process in it exited meanwhile)
// counts as a command's, since a connection from a process that is gone is worth nothing.
// A program run unsandboxed (sandbox "none") that left its session and was reparented to
// init is no longer anyone's descendant: that mode does not contain.
func CommandAncestor(pid int) bool {
	for i := 0; i < maxAncestry; i++ {
		if pid <= 1 {
			return false
		}
		if tracked(pid) {
			return true
		}
		ppid, ok := parentOf(pid)
		if !ok {
			return true
		}
		pid = ppid
	}
	return true
}

// parentOf reads pid's parent from /proc/PID/stat: the field after the state, which
// follows the command name in parentheses (itself free to contain ") ").
func parentOf(pid int) (int, bool) {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	i := bytes.LastIndex(stat, []byte(") "))
	if i < 0 {
		return 0, false
	}
	f := bytes.Fields(stat[i+2:])
	if len(f) < 2 {
		return 0, false
	}
	ppid, err := strconv.Atoi(string(f[1]))
	return ppid, err == nil
}
