package shell

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/testutil"
)

// TestCommandAncestor checks the control plane's question about a peer: a command's
// programs and their descendants are recognised, in every mode, and nothing else is.
func TestCommandAncestor(t *testing.T) {
	stranger := exec.Command("sleep", "7.4141")
	if err := stranger.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stranger.Process.Kill(); stranger.Wait() }()
	for _, pid := range []int{os.Getpid(), os.Getppid(), 1, 0, stranger.Process.Pid} {
		if CommandAncestor(pid) {
			t.Errorf("CommandAncestor(%d) = true for a process no command started", pid)
		}
	}
	for _, mode := range modes(t) {
		t.Run(mode, func(t *testing.T) {
			line := "sh -c 'sleep 7.3131' & sleep 7.3131 & sleep 7.3131"
			if mode == SandboxBwrap { // unsandboxed, a setsid process outlives the command
				line = "sh -c 'sleep 7.3131' & setsid sleep 7.3131 & sleep 7.3131"
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() {
				defer close(done)
				run(ctx, t, mustShell(t, Options{Sandbox: mode}), workspace(t),
					shellLine(line), time.Minute)
			}()
			var pids []string
			testutil.Wait(10*time.Second, func() bool { pids = testutil.ProcessesWith("sleep 7.3131"); return len(pids) >= 3 })
			if len(pids) < 3 {
				t.Fatalf("found the command's sleeps %v; want 3", pids)
			}
			for _, p := range pids {
				if pid, _ := strconv.Atoi(p); !CommandAncestor(pid) {
					t.Errorf("CommandAncestor(%d) = false for a program the command started", pid)
				}
			}
			cancel()
			<-done
			waitGone(t, "7.3131")
			running.Lock()
			left := len(running.pids)
			running.Unlock()
			if left != 0 {
				t.Errorf("%d pids still tracked after the command ended", left)
			}
		})
	}
	if CommandAncestor(stranger.Process.Pid) {
		t.Error("a stranger became a command's after the commands ran")
	}
}

// TestParentOf checks the /proc/PID/stat parsing, and that a gone pid is not read.
func TestParentOf(t *testing.T) {
	if ppid, ok := parentOf(os.Getpid()); !ok || ppid != os.Getppid() {
		t.Errorf("parentOf(self) = %d, %v; want %d", ppid, ok, os.Getppid())
	}
	if _, ok := parentOf(1 << 30); ok {
		t.Error("parentOf a pid beyond pid_max succeeded")
	}
	if !CommandAncestor(1 << 30) {
		t.Error("CommandAncestor of a gone pid = false; want it to fail closed")
	}
}

// A program the command started that left the command's process group (setsid) is
// killed with the command: the command's children are killed by pid, not by group alone.
func TestCommandsChildThatLeftItsGroupIsKilled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		run(ctx, t, mustShell(t, Options{Sandbox: SandboxNone}), workspace(t), shellLine("setsid sleep 7.5151 & wait"), time.Minute)
	}()
	// Once sleep runs, setsid has left the group: its command line begins with sleep.
	if !testutil.Wait(10*time.Second, func() bool {
		for _, p := range testutil.ProcessesWith("sleep 7.5151") {
			if cmdline, _ := os.ReadFile("/proc/" + p + "/cmdline"); strings.HasPrefix(string(cmdline), "sleep\x00") {
				return true
			}
		}
		return false
	}) {
		t.Fatal("the command's setsid sleep never started")
	}
	cancel()
	<-done
	waitGone(t, "7.5151")
}
