package shell

import (
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"sync"
)

// running are the pids of the programs this package started and has not reaped: the
// shells and bwraps of running commands. A tracked pid names our process and no other,
// since it is untracked before it is reaped.
var running struct {
	sync.Mutex
	pids map[int]bool
}

// startTracked starts cmd and tracks its pid under the lock CommandAncestor takes too: a
// program that has begun to run is never missed by a question asked meanwhile.
func startTracked(cmd *exec.Cmd) error {
	running.Lock()
	defer running.Unlock()
	if err := cmd.Start(); err != nil {
		return err
	}
	if running.pids == nil {
		running.pids = map[int]bool{}
	}
	running.pids[cmd.Process.Pid] = true
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
