package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/commands/shell"
	"github.com/agentd/agentd/daemon/config"
	"github.com/agentd/agentd/daemon/run"
	"github.com/agentd/agentd/daemon/store"
	"github.com/agentd/agentd/internal/testutil"
	ollama "github.com/ollama/ollama/api"
	"golang.org/x/sys/unix"
)

// runEnds collects what Options.OnRunEnd is told.
type runEnds struct {
	mu   sync.Mutex
	ends []run.End
}

func (e *runEnds) hook(o *Options) { o.OnRunEnd = e.add }

func (e *runEnds) add(r run.End) {
	e.mu.Lock()
	e.ends = append(e.ends, r)
	e.mu.Unlock()
}

func (e *runEnds) wait(t *testing.T, runID string) run.End {
	t.Helper()
	var end run.End
	if !testutil.Wait(10*time.Second, func() bool {
		e.mu.Lock()
		defer e.mu.Unlock()
		for _, r := range e.ends {
			if r.RunID == runID {
				end = r
				return true
			}
		}
		return false
	}) {
		t.Fatalf("run %s never reported its end", runID)
	}
	return end
}

// listForever makes the fake model do new work every step: write a file it has not
// written (listing the same folder again and again is a loop the watchdog stops).
func listForever(h *harness) {
	h.fake.SetDefaultNth(func(n int) string {
		return reply("write_file", map[string]string{"path": fmt.Sprintf("n%d.txt", n), "contents": fmt.Sprint(n)})
	})
}

func TestStepBudgetEndsRun(t *testing.T) {
	var ends runEnds
	h := newHarness(t, ends.hook)
	listForever(h)
	a, err := h.sup.runs.CreateRun(context.Background(),
		api.CreateAgentRequest{Name: "nightly", Description: "a test agent", Task: "look around"},
		run.Options{Budget: run.Budget{MaxSteps: 3}, Policy: &api.Policy{Mode: "auto", AutoSteps: 3}, By: "test"})
	if err != nil {
		t.Fatal(err)
	}
	end := ends.wait(t, a.RunID)
	if end.Outcome != api.RunBudgetExhausted || end.Steps != 3 || end.Tokens <= 0 || !strings.Contains(end.Reason, "3 steps") {
		t.Errorf("run end = %+v, want budget_exhausted after 3 steps with tokens counted", end)
	}
	got := h.waitFor(a.ID, "idle", func(a *api.Agent) bool { return a.State == api.StateIdle })
	if !strings.HasPrefix(got.StateReason, "budget exhausted: ") || got.Policy.Mode != "ask" || got.Pending != nil {
		t.Errorf("agent after the budget ran out = %+v", got)
	}
	if n := len(h.history(a.ID)); n != 3 {
		t.Errorf("%d episodes, want 3", n)
	}
	if n := len(h.fake.Requests()); n != 3 {
		t.Errorf("%d model calls, want 3: the run must stop before a fourth", n)
	}
}

func TestTokenBudgetEndsRun(t *testing.T) {
	var ends runEnds
	h := newHarness(t, ends.hook)
	listForever(h)
	a, err := h.sup.runs.CreateRun(context.Background(),
		api.CreateAgentRequest{Name: "thrifty", Description: "a test agent", Task: "look around"},
		run.Options{Budget: run.Budget{MaxTokens: 1}, Policy: &api.Policy{Mode: "auto", AutoSteps: 10}})
	if err != nil {
		t.Fatal(err)
	}
	end := ends.wait(t, a.RunID)
	if end.Outcome != api.RunBudgetExhausted || end.Steps != 1 || !strings.Contains(end.Reason, "token budget of 1") {
		t.Errorf("run end = %+v, want budget_exhausted after 1 step", end)
	}
}

func TestWallBudgetCancelsModelCall(t *testing.T) {
	var ends runEnds
	h := newHarness(t, ends.hook)
	h.fake.SetDelay(time.Minute) // the model never answers in time
	a, err := h.sup.runs.CreateRun(context.Background(),
		api.CreateAgentRequest{Name: "slow", Description: "a test agent", Task: "look around"},
		run.Options{Budget: run.Budget{MaxWall: 150 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	end := ends.wait(t, a.RunID)
	if end.Outcome != api.RunBudgetExhausted || end.Steps != 0 || !strings.Contains(end.Reason, "time budget of 150ms") {
		t.Errorf("run end = %+v", end)
	}
	h.waitFor(a.ID, "idle", func(a *api.Agent) bool { return a.State == api.StateIdle })
}

func TestStartTaskBudgetAndPatterns(t *testing.T) {
	var ends runEnds
	h := newHarness(t, ends.hook)
	a := h.create(api.CreateAgentRequest{Name: "keeper", Description: "d", Start: new(bool)})
	ctx := context.Background()
	_, err := h.sup.runs.StartTask(ctx, "keeper", "go", run.Options{Allow: []string{"read_file(unclosed"}})
	if !errors.Is(err, api.ErrBadRequest) || !strings.Contains(err.Error(), "allow pattern") {
		t.Fatalf("bad pattern: err = %v", err)
	}
	h.fake.SetDefault(func(*ollama.ChatRequest) string { return reply("read_file", map[string]string{"path": "x"}) })
	got, err := h.sup.runs.StartTask(ctx, "keeper", "read x", run.Options{Budget: run.Budget{MaxSteps: 1}, Allow: []string{"read_file(*)"}, By: "schedule s"})
	if err != nil {
		t.Fatal(err)
	}
	pv, _ := h.sup.policyService.Policy(ctx, a.ID)
	if len(pv.Permissions) != 1 || pv.Permissions[0].Pattern != "read_file(*)" || pv.Permissions[0].CreatedBy != "schedule s" {
		t.Errorf("stored patterns = %+v", pv.Permissions)
	}
	end := ends.wait(t, got.RunID)
	if end.Outcome != api.RunBudgetExhausted || end.Steps != 1 {
		t.Errorf("run end = %+v, want budget_exhausted at 1 step (read_file ran by the pattern)", end)
	}
	// A busy agent refuses a new run, saying why.
	h.fake.SetDefault(func(*ollama.ChatRequest) string { return reply("test_side_effect", map[string]string{"what": "x"}) })
	if _, err := h.sup.runs.StartTask(ctx, "keeper", "again", run.Options{}); err != nil {
		t.Fatal(err)
	}
	h.pending(a.ID)
	_, err = h.sup.runs.StartTask(ctx, "keeper", "third", run.Options{})
	if !errors.Is(err, api.ErrConflict) {
		t.Errorf("task for a busy agent: err = %v, want conflict", err)
	}
}

func TestStopAndRemoveReportRunEnd(t *testing.T) {
	var ends runEnds
	h := newHarness(t, ends.hook)
	h.fake.SetDefault(func(*ollama.ChatRequest) string { return reply("test_side_effect", map[string]string{"what": "x"}) })
	ctx := context.Background()
	for _, name := range []string{"stopped", "removed"} {
		a, err := h.sup.runs.CreateRun(ctx, api.CreateAgentRequest{Name: name, Description: "d", Task: "t"}, run.Options{Budget: run.Budget{MaxSteps: 5}})
		if err != nil {
			t.Fatal(err)
		}
		h.pending(a.ID)
		if name == "stopped" {
			_, err = h.sup.runs.Stop(ctx, a.ID)
		} else {
			err = h.sup.runs.DeleteAgent(ctx, a.ID)
		}
		if err != nil {
			t.Fatal(err)
		}
		end := ends.wait(t, a.RunID)
		want := map[string]api.RunOutcome{"stopped": api.RunStopped, "removed": api.RunRemoved}[name]
		if end.Outcome != want || end.Steps != 1 {
			t.Errorf("%s: run end = %+v, want %s at step 1", name, end, want)
		}
		if h.sup.budgets.budgetOf(a.RunID) != nil {
			t.Errorf("%s: the ended run's budget is still cached", name)
		}
	}
}

func TestBudgetSurvivesRestart(t *testing.T) {
	var ends runEnds
	h := newHarness(t, ends.hook)
	h.fake.SetDefault(func(*ollama.ChatRequest) string { return reply("test_side_effect", map[string]string{"what": "x"}) })
	a, err := h.sup.runs.CreateRun(context.Background(), api.CreateAgentRequest{Name: "durable", Description: "d", Task: "t"},
		run.Options{Budget: run.Budget{MaxSteps: 1}})
	if err != nil {
		t.Fatal(err)
	}
	p := h.pending(a.ID)
	h.stop()
	h.start()
	if _, err := h.decide(a.ID, p, "y"); err != nil {
		t.Fatal(err)
	}
	end := ends.wait(t, a.RunID)
	if end.Outcome != api.RunBudgetExhausted || end.Steps != 1 {
		t.Errorf("run end after a restart = %+v", end)
	}
}

// TestRequestBudgets: the budget of a create or task request (agentctl run/create/task
// --max-steps …) bounds the run it starts, and the run's end shows where it is followed.
func TestRequestBudgets(t *testing.T) {
	var ends runEnds
	h := newHarness(t, ends.hook)
	listForever(h)
	ctx := context.Background()
	events, cancel, err := h.sup.agentViews.Subscribe("", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()
	a, err := h.sup.runs.CreateAgent(ctx, api.CreateAgentRequest{Name: "capped", Description: "d", Task: "look around",
		Policy: &api.Policy{Mode: "auto", AutoSteps: 10}, Budget: &api.Budget{MaxSteps: 2}})
	if err != nil {
		t.Fatal(err)
	}
	end := ends.wait(t, a.RunID)
	if end.Outcome != api.RunBudgetExhausted || end.Steps != 2 || !strings.Contains(end.Reason, "2 steps") {
		t.Errorf("run end = %+v, want budget_exhausted after 2 steps", end)
	}
	got := h.waitFor(a.ID, "idle", func(a *api.Agent) bool { return a.State == api.StateIdle })
	if !strings.Contains(got.StateReason, "budget exhausted: the run made 2 steps") {
		t.Errorf("state reason = %q, want the budget named", got.StateReason)
	}
	shown, err := h.sup.agentViews.Agent(ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if r := shown.Runs[0]; r.Outcome != api.RunBudgetExhausted || r.Budget == nil || r.Budget.MaxSteps != 2 || !strings.Contains(r.Reason, "2 steps") {
		t.Errorf("shown run = %+v, want its budget and budget_exhausted with the reason", r)
	}
	for finish := false; !finish; {
		select {
		case e := <-events:
			finish = e.Type == api.EventFinish && e.AgentID == a.ID
			if finish && !strings.Contains(e.Message, "budget exhausted") {
				t.Errorf("finish event message = %q, want the budget named", e.Message)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("no finish event for the run over budget")
		}
	}

	// A follow-up task with its own budget: tokens this time, and a wall time that stays.
	next, err := h.sup.runs.TaskRun(ctx, "capped", api.TaskRequest{Task: "again", Budget: &api.Budget{MaxTokens: 1, MaxTime: "1h"}})
	if err != nil {
		t.Fatal(err)
	}
	if next.RunID == a.RunID {
		t.Fatal("the task did not start a new run")
	}
	// The run over budget dropped auto mode: its first proposal asks.
	if _, err := h.decide(a.ID, h.pending(a.ID), "y"); err != nil {
		t.Fatal(err)
	}
	end = ends.wait(t, next.RunID)
	if end.Outcome != api.RunBudgetExhausted || end.Steps != 1 || !strings.Contains(end.Reason, "token budget of 1") {
		t.Errorf("task run end = %+v, want budget_exhausted after 1 step", end)
	}
	shown, _ = h.sup.agentViews.Agent(ctx, a.ID)
	if b := shown.Runs[0].Budget; b == nil || b.MaxTokens != 1 || b.MaxTime != "1h0m0s" {
		t.Errorf("task run budget = %+v", b)
	}
	if h.sup.budgets.budgetOf(next.RunID) != nil {
		t.Error("the ended run's budget is still cached")
	}
}

func TestRequestBudgetsRefused(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	h.create(api.CreateAgentRequest{Name: "idle", Description: "d", Start: new(bool)})
	no := false
	tests := []struct {
		name string
		call func() error
		want string
	}{
		{"negative_steps", func() error {
			_, err := h.sup.runs.CreateAgent(ctx, api.CreateAgentRequest{Task: "t", Budget: &api.Budget{MaxSteps: -1}})
			return err
		}, "max_steps -1"},
		{"negative_tokens", func() error {
			_, err := h.sup.runs.TaskRun(ctx, "idle", api.TaskRequest{Task: "t", Budget: &api.Budget{MaxTokens: -5}})
			return err
		}, "max_tokens -5"},
		{"bad_time", func() error {
			_, err := h.sup.runs.TaskRun(ctx, "idle", api.TaskRequest{Task: "t", Budget: &api.Budget{MaxTime: "soon"}})
			return err
		}, `max_time "soon"`},
		{"tiny_time", func() error {
			_, err := h.sup.runs.CreateAgent(ctx, api.CreateAgentRequest{Task: "t", Budget: &api.Budget{MaxTime: "10ms"}})
			return err
		}, `max_time "10ms"`},
		{"no_run_to_bound", func() error {
			_, err := h.sup.runs.CreateAgent(ctx, api.CreateAgentRequest{Name: "x", Description: "d", Start: &no, Budget: &api.Budget{MaxSteps: 3}})
			return err
		}, "needs a run"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			if !errors.Is(err, api.ErrBadRequest) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want a bad request naming %q", err, tt.want)
			}
		})
	}
	if got, _ := h.sup.agentViews.Agent(ctx, "idle"); got.State != api.StateIdle || got.RunID != "" {
		t.Errorf("a refused task changed the agent: %+v", got)
	}
}

// exhaustedEvent reads events until the agent's event of type typ that says a budget
// stopped it, and returns it; any other event of that type for the agent first fails.
func exhaustedEvent(t *testing.T, events <-chan api.Event, agentID string, typ api.EventType, state api.AgentState) api.Event {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case e := <-events:
			if e.AgentID != agentID || e.Type != typ || e.Agent == nil || e.Agent.State != state {
				continue
			}
			if e.Exhausted == nil {
				t.Fatalf("%s event for %s without budget_exhausted: %+v", typ, state, e)
			}
			return e
		case <-timeout:
			t.Fatalf("no %s event for %s", typ, state)
			return api.Event{}
		}
	}
}

// TestAgentBudgetPauseEvent: the state event of an agent its own budget paused says
// which budget and its bound, so a front end can show "paused: over its token budget".
func TestAgentBudgetPauseEvent(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.MaxTokens, o.MaxTime = 1, config.Duration{Duration: time.Hour} })
	listForever(h)
	events, cancel, err := h.sup.agentViews.Subscribe("", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()
	a := autoAgent(h, 10)
	e := exhaustedEvent(t, events, a.ID, api.EventState, api.StatePaused)
	want := api.BudgetExhausted{Scope: api.BudgetScopeAgent, Kind: "tokens", RunID: a.RunID,
		Budget: api.Budget{MaxTokens: 1, MaxTime: "1h0m0s"}}
	if *e.Exhausted != want {
		t.Errorf("budget_exhausted = %+v, want %+v", *e.Exhausted, want)
	}
	if e.Message != e.Agent.StateReason || e.Message == "" {
		t.Errorf("message %q, reason %q: want the reason", e.Message, e.Agent.StateReason)
	}
}

// TestRunBudgetEndEvents: the state and finish events of a run its budget ended name
// the run's budget, not the agent's.
func TestRunBudgetEndEvents(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.MaxSteps = 100 })
	listForever(h)
	events, cancel, err := h.sup.agentViews.Subscribe("", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()
	a, err := h.sup.runs.CreateAgent(context.Background(), api.CreateAgentRequest{Name: "capped", Description: "d", Task: "look around",
		Policy: &api.Policy{Mode: "auto", AutoSteps: 10}, Budget: &api.Budget{MaxSteps: 2, MaxTime: "1h"}})
	if err != nil {
		t.Fatal(err)
	}
	want := api.BudgetExhausted{Scope: api.BudgetScopeRun, Kind: "steps", RunID: a.RunID,
		Budget: api.Budget{MaxSteps: 2, MaxTime: "1h0m0s"}}
	for _, typ := range []api.EventType{api.EventState, api.EventFinish} {
		e := exhaustedEvent(t, events, a.ID, typ, api.StateIdle)
		if *e.Exhausted != want {
			t.Errorf("%s: budget_exhausted = %+v, want %+v", typ, *e.Exhausted, want)
		}
	}
}

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
	h := newHarness(t, withShell(t), func(o *Options) { o.MaxDisk = config.Size(256 << 10) })
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
	h := newHarness(t, withShell(t), func(o *Options) { o.MaxDisk = config.Size(2 << 20) })
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
	s := &budgets{base: run.Budget{MaxDisk: 32 << 20}}
	a := &store.Agent{}
	a.ID, a.Workspace = "a-1", ws
	if n := s.diskAfter(a, commands.ClassWriteWorkspace); n < 0 {
		t.Fatal("the first command after a start is not measured")
	}
	took := func(d time.Duration) { // the last walk as if it took d
		last, _ := s.walks.get(a.ID)
		last.took = d
		s.walks.set(a.ID, last)
	}
	costly := func() { took(time.Second) } // as a workspace of many files would take
	took(0)                                // cheap, however long the walk took on a loaded machine
	if n := s.diskAfter(a, commands.ClassWriteWorkspace); n < 0 {
		t.Error("a cheap workspace is not measured after every command")
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
