package agent

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/commands/shell"
	"github.com/agentd/agentd/daemon/run"
	"github.com/agentd/agentd/daemon/store"
)

// withShell offers execute_shell, unsandboxed: these tests are about the disk, and
// bubblewrap is not needed to write files.
func withShell(t *testing.T) func(*Options) {
	sh, err := shell.NewExecuteShell(shell.Options{Sandbox: shell.SandboxNone})
	if err != nil {
		t.Fatal(err)
	}
	return func(o *Options) {
		o.Components = append(o.Components, commands.CommandList{ID: "shell", Cmds: commands.Set{sh}})
	}
}

func shellReply(line string) string {
	return reply("execute_shell", map[string]string{"command_line": line})
}

// An agent whose workspace outgrows its disk budget pauses before its next step, saying
// how much it takes, its budget and the fix; emptied by a person, it resumes.
func TestAgentOverItsDiskBudgetPauses(t *testing.T) {
	h := newHarness(t, withShell(t), func(o *Options) { o.AgentBudget = run.Budget{MaxDisk: 256 << 10} })
	h.fake.Script(shellReply("head -c 1048576 /dev/zero > big"))
	listForever(h)
	a := autoAgent(h, 10)
	h.approve(a.ID, "execute_shell") // a shell line always asks
	got := pausedByBudget(h, a.ID)
	for _, want := range []string{"its workspace takes 1.", "over its disk budget of 256 KiB", a.Workspace, "agentctl budget tester --max-disk SIZE"} {
		if !strings.Contains(got.StateReason, want) {
			t.Errorf("reason %q: want it to say %q", got.StateReason, want)
		}
	}
	if got.StepsTotal != 1 || got.DiskBytes < 1<<20 || got.Budget == nil || got.Budget.MaxDisk != 256<<10 {
		t.Errorf("agent: %d steps, disk %d, budget %+v; want 1 step, over 1 MiB, the budget shown", got.StepsTotal, got.DiskBytes, got.Budget)
	}
	if _, err := h.sup.runs.Resume(context.Background(), a.ID); !errors.Is(err, api.ErrConflict) || !strings.Contains(err.Error(), "disk budget") {
		t.Errorf("resume over the disk budget: %v, want a conflict naming it", err)
	}

	if err := os.Remove(filepath.Join(a.Workspace, "big")); err != nil {
		t.Fatal(err)
	}
	resumed, err := h.sup.runs.Resume(context.Background(), a.ID)
	if err != nil || resumed.DiskBytes >= 256<<10 {
		t.Fatalf("resume after the file went: %+v, %v; want it measured again and resumed", resumed, err)
	}
	h.waitFor(a.ID, "steps past the pause", func(a *api.Agent) bool { return a.StepsTotal >= 3 })
}

// A command that takes the workspace over the disk budget while it runs is cut then,
// not when it ends, and its result says why.
func TestCommandCutWhenItsWorkspaceOutgrowsTheDiskBudget(t *testing.T) {
	h := newHarness(t, withShell(t), func(o *Options) { o.AgentBudget = run.Budget{MaxDisk: 2 << 20} })
	// A megabyte every fifth of a second for 30 s, unless it is cut.
	h.fake.Script(shellReply("for i in $(seq 150); do head -c 1048576 /dev/zero > f$i; sleep 0.2; done; echo finished"))
	listForever(h)
	a := autoAgent(h, 10)
	h.approve(a.ID, "execute_shell")
	pausedByBudget(h, a.ID)
	eps := h.history(a.ID)
	if len(eps) != 1 || !strings.Contains(eps[0].Result, "cut off: its workspace grew to") ||
		!strings.Contains(eps[0].Result, "over its disk budget of 2 MiB") || strings.Contains(eps[0].Result, "finished") {
		t.Fatalf("history %+v; want the command cut, saying why", eps)
	}
	if n, _ := filepath.Glob(filepath.Join(a.Workspace, "f*")); len(n) >= 150 {
		t.Errorf("%d files written: the command was not cut while it ran", len(n))
	}
}

// smallFileSystem mounts a tmpfs of size bytes on a new folder and returns it. Mounting
// needs root: without it the test skips, saying so, except on CI, where it runs as root.
func smallFileSystem(t *testing.T, size string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "small")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size="+size+",mode=0755"); err != nil {
		if os.Getenv("CI") == "true" && os.Geteuid() == 0 {
			t.Fatalf("CI runs as root but cannot mount a tmpfs: %v", err)
		}
		t.Skipf("cannot mount a small file system here (needs root): %v", err)
	}
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
	return dir
}

// With the workspaces on a file system of their own, a command that fills it leaves the
// store working: every result is recorded, the run goes on to its end, and nothing
// stored is lost across a restart.
func TestStoreKeepsRecordingWhenTheWorkspacesDiskIsFull(t *testing.T) {
	wsRoot := smallFileSystem(t, "2m")
	h := newHarness(t, withShell(t), func(o *Options) { o.WorkspaceRoot = wsRoot })
	h.fake.Script(
		shellReply("head -c 10485760 /dev/zero > big; echo wrote $?"),
		reply("write_file", map[string]string{"path": "after.txt", "contents": strings.Repeat("x", 8192)}),
		reply("finish", map[string]string{"reason": "done"}),
	)
	a := autoAgent(h, 10)
	if !strings.HasPrefix(a.Workspace, wsRoot) {
		t.Fatalf("workspace %s is not on the small file system %s", a.Workspace, wsRoot)
	}
	h.approve(a.ID, "execute_shell")
	h.waitFor(a.ID, "the run's end", func(a *api.Agent) bool { return a.State == api.StateIdle })
	check := func(when string) {
		eps := h.history(a.ID)
		if len(eps) != 3 {
			t.Fatalf("%s: %d episodes, want all 3: %+v", when, len(eps), eps)
		}
		if !strings.Contains(eps[0].Result, "No space left on device") || eps[1].Outcome != "failed" || eps[2].Command != "finish" {
			t.Errorf("%s: history %+v; want the full disk in the first two results, then finish", when, eps)
		}
	}
	check("after the run")
	h.stop()
	h.start()
	check("after a restart")
}

// A workspace whose walk is costly is walked again after a command only when its file
// system grew by more than the budget leaves, or a while after the last walk; a cheap
// one after every command.
func TestCostlyWorkspaceWalkedWhenItMayBeOverItsBudget(t *testing.T) {
	ws := smallFileSystem(t, "64m") // nothing else writes there
	s := &agentBudgets{base: run.Budget{MaxDisk: 32 << 20}}
	a := &store.Agent{}
	a.ID, a.Workspace = "a-1", ws
	if n := s.diskAfter(a, commands.ClassWriteWorkspace); n < 0 {
		t.Fatal("the first command after a start is not measured")
	}
	if n := s.diskAfter(a, commands.ClassWriteWorkspace); n < 0 {
		t.Error("a cheap workspace is not measured after every command")
	}
	costly := func() { // the last walk as a workspace of many files would take
		last, _ := s.walks.get(a.ID)
		last.took = time.Second
		s.walks.set(a.ID, last)
	}
	costly()
	a.DiskBytes = 30 << 20 // 2 MiB left
	os.WriteFile(filepath.Join(ws, "small"), make([]byte, 1<<20), 0o644)
	if n := s.diskAfter(a, commands.ClassWriteWorkspace); n >= 0 {
		t.Error("a costly workspace is walked again after a command that grew it by less than the budget leaves")
	}
	os.WriteFile(filepath.Join(ws, "big"), make([]byte, 4<<20), 0o644)
	if n := s.diskAfter(a, commands.ClassWriteWorkspace); n < 5<<20 {
		t.Errorf("after it grew by more than the budget leaves: measured %d, want it walked (over 5 MiB)", n)
	}
	costly()
	last, _ := s.walks.get(a.ID)
	last.at = last.at.Add(-diskRewalk)
	s.walks.set(a.ID, last)
	if n := s.diskAfter(a, commands.ClassWriteWorkspace); n < 0 {
		t.Error("a costly workspace is not walked again a while after its last walk")
	}
	if n := s.diskAfter(a, commands.ClassRead); n >= 0 {
		t.Error("a read command is measured")
	}
}
