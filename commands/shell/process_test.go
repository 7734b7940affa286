package shell

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
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

// TestNoInheritedDescriptors checks that a program gets only its stdin, stdout and stderr
// (and what the sandbox itself hands bwrap), never a descriptor the daemon holds open
// without close-on-exec: one it inherited from whatever started it (a shell script, a
// supervisor), or one a library opened so. Such a descriptor could be the database, a
// socket or a log, open for writing past every mount the sandbox makes.
func TestNoInheritedDescriptors(t *testing.T) {
	canary := filepath.Join(t.TempDir(), "inherited-canary")
	if err := os.WriteFile(canary, []byte("secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fd, err := syscall.Open(canary, syscall.O_RDWR, 0) // no O_CLOEXEC, as an inherited one
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	high := 200
	if err := syscall.Dup2(fd, high); err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(high)
	tests := []struct {
		name string
		line string
	}{
		{name: "shell_fd_table", line: `ls -l /proc/$$/fd/`},
		{name: "read_by_number", line: `cat <&200; echo status=$?`},
		{name: "child_fd_table", line: `sh -c 'ls -l /proc/self/fd/'`},
	}
	for _, mode := range modes(t) {
		for _, tt := range tests {
			t.Run(mode+"/"+tt.name, func(t *testing.T) {
				got, err := run(context.Background(), t, mustShell(t, Options{Sandbox: mode}), workspace(t), shellLine(tt.line), 30*time.Second)
				if err != nil {
					t.Fatalf("error %v; output:\n%s", err, got)
				}
				for _, leak := range []string{"inherited-canary", "secret", " 200 ->", fmt.Sprintf(" %d ->", fd)} {
					if strings.Contains(got, leak) {
						t.Errorf("the program inherited the daemon's descriptor (%q):\n%s", leak, got)
					}
				}
			})
		}
	}
}
