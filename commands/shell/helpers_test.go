package shell

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/internal/testutil"
)

// bwrapHere returns the bwrap binary when it can build a sandbox on this machine.
//
// Without one, sandbox tests skip with the reason. CI machines are often containers without
// unprivileged user namespaces, where an installed bwrap cannot run: failing there would
// make CI red for the machine, not the code, so with CI=true such a bwrap is reported with
// a loud skip instead; set AGENTD_REQUIRE_SANDBOX=1 to make it a failure.
func bwrapHere(t testing.TB) string {
	t.Helper()
	path, err := exec.LookPath("bwrap")
	if err != nil {
		t.Skip("bwrap is not installed (Debian package bubblewrap): sandbox not tested")
	}
	if _, err := CheckSandbox(Options{Sandbox: SandboxBwrap, Bwrap: path}); err != nil {
		switch {
		case os.Getenv("AGENTD_REQUIRE_SANDBOX") == "1":
			t.Fatalf("AGENTD_REQUIRE_SANDBOX=1 but %v", err)
		case os.Getenv("CI") == "true":
			t.Skipf("SANDBOX NOT TESTED ON THIS CI MACHINE: bwrap is installed but %v", err)
		}
		t.Skipf("sandbox not tested: %v", err)
	}
	return path
}

// modes are the sandbox modes to run a test under: always none, and bwrap where it works.
func modes(t *testing.T) []string {
	m := []string{SandboxNone}
	path, err := exec.LookPath("bwrap")
	if err == nil {
		_, err = CheckSandbox(Options{Sandbox: SandboxBwrap, Bwrap: path})
	}
	if err == nil {
		m = append(m, SandboxBwrap)
	} else {
		t.Logf("testing unsandboxed only: %v", err)
	}
	return m
}

// workspace returns a fresh workspace folder with its symlinks resolved, as
// commands.ResolvePath reports it.
func workspace(t testing.TB) string { return testutil.ResolvedTempDir(t) }

func mustShell(t testing.TB, o Options) commands.Command {
	t.Helper()
	c, err := NewExecuteShell(o)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// run runs c through commands.Run, as the daemon does, with args marshalled from v.
func run(ctx context.Context, t testing.TB, c commands.Command, ws string, v any, timeout time.Duration) (string, error) {
	t.Helper()
	args, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return commands.Run(ctx, c, commands.Env{Workspace: ws, AgentID: "a-test"}, args, commands.Limits{Timeout: timeout})
}

// mustRun runs line through c in ws and returns its output, failing the test (with the
// output) if it gave an error.
func mustRun(t testing.TB, c commands.Command, ws, line string, timeout time.Duration) string {
	t.Helper()
	got, err := run(context.Background(), t, c, ws, shellLine(line), timeout)
	if err != nil {
		t.Fatalf("error %v; output:\n%s", err, got)
	}
	return got
}

func shellLine(line string) map[string]string { return map[string]string{"command_line": line} }

// processesRunning lists the pids of processes whose whole command line, its words
// joined by spaces, is cmd: a program the shell started, not the shell running the line.
func processesRunning(cmd string) []string {
	var pids []string
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "cmdline"))
		if err == nil && strings.Join(strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00"), " ") == cmd {
			pids = append(pids, filepath.Base(d))
		}
	}
	return pids
}

// waitGone fails the test unless every process with marker in its command line is gone
// within a few seconds: SIGKILL is immediate, reparenting and reaping are not quite.
func waitGone(t *testing.T, marker string) {
	t.Helper()
	var left []string
	if testutil.Wait(5*time.Second, func() bool { left = testutil.ProcessesWith(marker); return len(left) == 0 }) {
		return
	}
	for _, p := range left {
		if pid, err := strconv.Atoi(p); err == nil {
			syscall.Kill(pid, syscall.SIGKILL) // ours, marked: do not leave them behind
		}
	}
	t.Fatalf("processes %v running %q survived the command:\n%s", left, marker, describeProcesses(left))
}

// describeProcesses says, for a failure's message, where each of pids stands: its state,
// parent, pid namespace and cgroups, as /proc read them (what is gone by now is skipped).
func describeProcesses(pids []string) string {
	var b strings.Builder
	for _, p := range pids {
		status, _ := os.ReadFile(filepath.Join("/proc", p, "status"))
		cgroup, _ := os.ReadFile(filepath.Join("/proc", p, "cgroup"))
		cmdline, _ := os.ReadFile(filepath.Join("/proc", p, "cmdline"))
		b.WriteString(p + ": " + strings.ReplaceAll(string(cmdline), "\x00", " ") + "\n")
		for _, line := range strings.Split(string(status), "\n") {
			if k, _, _ := strings.Cut(line, ":"); k == "State" || k == "PPid" || k == "NSpid" || k == "SigPnd" || k == "ShdPnd" {
				b.WriteString("    " + line + "\n")
			}
		}
		b.WriteString("    cgroup " + strings.Join(strings.Fields(string(cgroup)), " ") + "\n")
	}
	return b.String()
}

// checkResult fails t unless got holds every want and none of notWant; "{ws}" in either
// stands for the workspace ws.
func checkResult(t *testing.T, got, ws string, want, notWant []string) {
	t.Helper()
	for _, w := range want {
		if w = strings.ReplaceAll(w, "{ws}", ws); !strings.Contains(got, w) {
			t.Errorf("result lacks %q:\n%s", w, got)
		}
	}
	for _, w := range notWant {
		if w = strings.ReplaceAll(w, "{ws}", ws); strings.Contains(got, w) {
			t.Errorf("result has %q:\n%s", w, got)
		}
	}
}

// pathSwap is a workspace, ws (base/a/ws), whose folder base/swapped (the workspace's own
// or one on its path) a test swaps, after a command's checks, for a link that leads the
// workspace's path to lookalike, a folder outside; the checked workspace is then at moved.
type pathSwap struct{ ws, lookalike, moved, at, to string }

// newPathSwap makes the workspace and its lookalike, both empty.
func newPathSwap(t *testing.T, swapped string) pathSwap {
	t.Helper()
	base, outside := testutil.ResolvedTempDir(t), testutil.ResolvedTempDir(t)
	ws, at := filepath.Join(base, "a", "ws"), filepath.Join(base, swapped)
	rest := strings.TrimPrefix(ws, at) // what lies between the swapped folder and the workspace
	to := filepath.Join(outside, filepath.Base(at))
	p := pathSwap{ws: ws, lookalike: filepath.Join(to, rest), moved: filepath.Join(at+"-moved", rest), at: at, to: to}
	for _, d := range []string{p.ws, p.lookalike} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// swap moves the swapped folder aside and puts the link in its place.
func (p pathSwap) swap(t *testing.T) {
	if err := os.Rename(p.at, p.at+"-moved"); err != nil {
		t.Error(err)
	}
	if err := os.Symlink(p.to, p.at); err != nil {
		t.Error(err)
	}
}
