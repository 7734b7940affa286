package agent

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	ollama "github.com/ollama/ollama/api"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/daemon/config"
	"github.com/agentd/agentd/daemon/store"
	"github.com/agentd/agentd/internal/testutil"
)

// autoAgent creates an agent whose next n proposals run without asking.
func autoAgent(h *harness, n int) *api.Agent {
	return h.create(api.CreateAgentRequest{Name: "tester", Description: "a test agent", Goals: []string{"look around"},
		Policy: &api.Policy{Mode: "auto", AutoSteps: n}})
}

func pausedByBudget(h *harness, id string) *api.Agent {
	h.t.Helper()
	return h.waitFor(id, "a pause by the agent's budget", func(a *api.Agent) bool {
		return a.State == api.StatePaused && strings.HasPrefix(a.StateReason, agentBudgetReason)
	})
}

func TestAgentStepBudgetPausesAndRaisedBudgetGoesOn(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.MaxSteps = 2 })
	listForever(h)
	a := autoAgent(h, 10)
	got := pausedByBudget(h, a.ID)
	if !strings.Contains(got.StateReason, "2 steps over its runs") || !strings.Contains(got.StateReason, "agentctl budget tester --max-steps N") {
		t.Errorf("reason = %q: want the budget and the command that raises it", got.StateReason)
	}
	if got.StepsTotal != 2 || got.Budget == nil || got.Budget.MaxSteps != 2 || got.Pending != nil {
		t.Errorf("agent = steps %d, budget %+v, pending %v", got.StepsTotal, got.Budget, got.Pending)
	}
	if n := len(h.fake.Requests()); n != 2 {
		t.Errorf("%d model calls, want 2: no step past the budget", n)
	}
	// Nothing lost: the run goes on, with its history and policy.
	if got.RunID != a.RunID || got.Policy.Mode != "auto" || len(h.history(a.ID)) != 2 {
		t.Errorf("after the pause: run %s (was %s), policy %+v, %d episodes", got.RunID, a.RunID, got.Policy, len(h.history(a.ID)))
	}
	if _, err := h.sup.runs.Resume(context.Background(), a.ID); !errors.Is(err, api.ErrConflict) || !strings.Contains(err.Error(), "over its budget") {
		t.Errorf("resume over budget: err = %v, want a conflict naming the budget", err)
	}
	entries, _ := h.sup.auditLog.Audit(context.Background(), api.AuditQuery{Agent: a.ID})
	if !hasAuditKind(entries, "agent_budget_exhausted") {
		t.Error("no agent_budget_exhausted audit entry")
	}

	raised, err := h.sup.budgets.SetBudget(context.Background(), a.ID, api.BudgetRequest{MaxSteps: new(4)})
	if err != nil {
		t.Fatal(err)
	}
	if raised.Budget.MaxSteps != 4 || raised.State == api.StatePaused {
		t.Errorf("after raising: budget %+v, state %s; want 4 steps and going on", raised.Budget, raised.State)
	}
	again := pausedByBudget(h, a.ID)
	if again.StepsTotal != 4 || again.RunID != a.RunID || len(h.history(a.ID)) != 4 {
		t.Errorf("after the raised budget: %d steps, run %s, %d episodes; want 4 in the same run", again.StepsTotal, again.RunID, len(h.history(a.ID)))
	}
	// The budget set here outlives a restart.
	h.stop()
	h.start()
	after, err := h.sup.agentViews.Agent(context.Background(), a.ID)
	if err != nil || after.Budget.MaxSteps != 4 || after.State != api.StatePaused {
		t.Errorf("after a restart: %+v, %v", after, err)
	}
}

func TestAgentTokenBudgetFromPerAgentConfig(t *testing.T) {
	h := newHarness(t, func(o *Options) {
		o.MaxTokens = 1 << 40
		o.Agents = map[string]config.AgentOverride{"tester": {MaxTokens: new(int64(1))}}
	})
	listForever(h)
	a := autoAgent(h, 10)
	got := pausedByBudget(h, a.ID)
	if !strings.Contains(got.StateReason, "its token budget is 1") || got.StepsTotal != 1 {
		t.Errorf("agent = %q after %d steps; want the token budget after 1", got.StateReason, got.StepsTotal)
	}
	// 0 lifts the bound.
	if _, err := h.sup.budgets.SetBudget(context.Background(), a.ID, api.BudgetRequest{MaxTokens: new(int64(0)), MaxSteps: new(3)}); err != nil {
		t.Fatal(err)
	}
	got = pausedByBudget(h, a.ID)
	if !strings.Contains(got.StateReason, "step budget") || got.StepsTotal != 3 {
		t.Errorf("after lifting the token bound: %q after %d steps", got.StateReason, got.StepsTotal)
	}
	// Reset goes back to the config's token budget of 1.
	reset, err := h.sup.budgets.SetBudget(context.Background(), a.ID, api.BudgetRequest{Reset: true})
	if err != nil || reset.Budget.MaxTokens != 1 || reset.Budget.MaxSteps != 0 || reset.State != api.StatePaused {
		t.Errorf("reset: %+v, %v; want the config's budget, still paused", reset, err)
	}
}

func TestAgentTimeBudgetCountsBusyTime(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.MaxTime = config.Duration{Duration: 50 * time.Millisecond} })
	listForever(h)
	h.fake.SetDelay(time.Minute) // the first step thinks longer than the whole budget
	a := autoAgent(h, 10)
	// The model call is cut when the budget runs out, as a run's wall time cuts it: well
	// before the minute the model would take, however slow the machine.
	got := pausedByBudget(h, a.ID)
	if got.StepsTotal != 0 || got.BusyMS < 50 || got.BusyMS > 30000 || !strings.Contains(got.StateReason, "time budget is 50ms") {
		t.Errorf("agent = %d steps, busy %d ms, %q; want the first step cut at 50ms", got.StepsTotal, got.BusyMS, got.StateReason)
	}
	// Waiting for people is not busy time.
	h.fake.SetDelay(0)
	if _, err := h.sup.budgets.SetBudget(context.Background(), a.ID, api.BudgetRequest{MaxTime: new("1h")}); err != nil {
		t.Fatal(err)
	}
	h.sup.runs.Pause(context.Background(), a.ID)
	h.waitFor(a.ID, "paused", func(a *api.Agent) bool { return a.State == api.StatePaused })
	// A step in flight at the pause lands its busy time before the agent's loop stops.
	testutil.Eventually(t, time.Minute, "the paused agent's loop to stop", func() bool {
		h.sup.mu.Lock()
		defer h.sup.mu.Unlock()
		r := h.sup.runners[a.ID]
		return r == nil || !r.running
	})
	before := h.waitFor(a.ID, "paused", func(a *api.Agent) bool { return true }).BusyMS
	busy := func() int64 { now, _ := h.sup.agentViews.Agent(context.Background(), a.ID); return now.BusyMS }
	testutil.Hold(100*time.Millisecond, func() bool { return busy() == before })
	if now, _ := h.sup.agentViews.Agent(context.Background(), a.ID); now.BusyMS != before {
		t.Errorf("busy time moved from %d to %d ms while paused", before, now.BusyMS)
	}
}

func TestSetBudgetRefusesBadValues(t *testing.T) {
	h := newHarness(t)
	a := h.create(api.CreateAgentRequest{Name: "tester", Description: "d", Start: new(bool)})
	for _, c := range []struct {
		name string
		req  api.BudgetRequest
		want string
	}{
		{"negative_steps", api.BudgetRequest{MaxSteps: new(-1)}, "max_steps -1"},
		{"negative_tokens", api.BudgetRequest{MaxTokens: new(int64(-5))}, "max_tokens -5"},
		{"bad_duration", api.BudgetRequest{MaxTime: new("soon")}, `max_time "soon"`},
		{"negative_duration", api.BudgetRequest{MaxTime: new("-1h")}, `max_time "-1h"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := h.sup.budgets.SetBudget(context.Background(), a.ID, c.req)
			if !errors.Is(err, api.ErrBadRequest) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want a bad request naming %s", err, c.want)
			}
		})
	}
	var st *store.Agent
	h.st.View(context.Background(), func(tx *store.Tx) (err error) { st, err = tx.Agent(a.ID); return err })
	if st.Budget != (store.AgentBudget{}) {
		t.Errorf("a refused request changed the budget: %+v", st.Budget)
	}
}

func hasAuditKind(entries []api.AuditEntry, kind string) bool {
	for _, e := range entries {
		if e.Kind == kind {
			return true
		}
	}
	return false
}

// blockCmd is test_block: it runs until it is cancelled.
type blockCmd struct{}

func (blockCmd) Spec() commands.Spec {
	return commands.Spec{Name: "test_block", Description: "wait a long time",
		Params: commands.Object(commands.Prop{Name: "what", Schema: commands.String("what", 40)}), Class: commands.ClassRead}
}

func (blockCmd) Execute(ctx context.Context, _ commands.Env, _ json.RawMessage) (string, error) {
	select {
	case <-ctx.Done():
		return "", ctx.Err()
	case <-time.After(time.Minute):
		return "waited", nil
	}
}

func init() { commands.Register(blockCmd{}) }

// TestAgentTimeBudgetCutsALongCommand: a command that runs past what the agent's time
// budget leaves is cancelled, its result says why, and the agent pauses. The budget is
// set once the step has thought (to its busy time then plus 300ms), so however long the
// thinking took on a loaded machine, what the budget leaves is the command's.
func TestAgentTimeBudgetCutsALongCommand(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.Commands = append(slices.Clone(o.Commands), "test_block") })
	h.fake.SetDefault(func(*ollama.ChatRequest) string { return reply("test_block", map[string]string{"what": "x"}) })
	a := h.create(api.CreateAgentRequest{})
	p := h.pending(a.ID)
	thought := h.waitFor(a.ID, "the proposal", func(*api.Agent) bool { return true }).BusyMS
	limit := time.Duration(thought)*time.Millisecond + 300*time.Millisecond
	if _, err := h.sup.budgets.SetBudget(context.Background(), a.ID, api.BudgetRequest{MaxTime: new(limit.String())}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.decide(a.ID, p, "y"); err != nil {
		t.Fatal(err)
	}
	got := pausedByBudget(h, a.ID)
	if got.StepsTotal != 1 || got.BusyMS < limit.Milliseconds() || got.BusyMS > limit.Milliseconds()+10000 || !strings.Contains(got.StateReason, "time budget is "+limit.String()) {
		t.Errorf("agent = %d steps, busy %d ms, %q; want one step cut at %v", got.StepsTotal, got.BusyMS, got.StateReason, limit)
	}
	eps := h.history(a.ID)
	if len(eps) != 1 || eps[0].Outcome != "failed" || !strings.Contains(eps[0].Result, "time budget ran out") {
		t.Errorf("history = %+v, want the command failed, cut by the time budget", eps)
	}
}

// TestTaskOverAgentBudgetRefused: a task for an agent whose own budget is used up is
// refused at once, naming the budget, instead of starting a run that pauses at once.
func TestTaskOverAgentBudgetRefused(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.MaxSteps = 1 })
	listForever(h)
	ctx := context.Background()
	a := autoAgent(h, 10)
	pausedByBudget(h, a.ID)
	if _, err := h.sup.runs.Stop(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	for _, call := range []func() (*api.Agent, error){
		func() (*api.Agent, error) { return h.sup.runs.Task(ctx, a.ID, "more") },
		func() (*api.Agent, error) {
			return h.sup.runs.TaskRun(ctx, a.ID, api.TaskRequest{Task: "more", Budget: &api.Budget{MaxSteps: 5}})
		},
	} {
		_, err := call()
		if !errors.Is(err, api.ErrConflict) || !strings.Contains(err.Error(), "over its budget") || !strings.Contains(err.Error(), "agentctl budget tester --max-steps N") {
			t.Errorf("task over budget: err = %v, want a conflict naming the budget and its fix", err)
		}
	}
	got, _ := h.sup.agentViews.Agent(ctx, a.ID)
	if got.State != api.StateIdle || got.RunID != a.RunID {
		t.Errorf("a refused task changed the agent: state %s, run %s (was %s)", got.State, got.RunID, a.RunID)
	}
	// Raised, the task is taken.
	if _, err := h.sup.budgets.SetBudget(ctx, a.ID, api.BudgetRequest{MaxSteps: new(10)}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.sup.runs.Task(ctx, a.ID, "more"); err != nil {
		t.Errorf("task after the budget was raised: %v", err)
	}
}

// nestDeep is a line that nests 2,100 folders named d, past the depth the disk walk
// descends, then runs rest.
func nestDeep(rest string) string {
	return `python3 -c 'import os
for _ in range(2100):
    os.mkdir("d"); os.chdir("d")' && ` + rest
}

// A step that leaves its workspace beyond what the disk walk can count (folders nested
// past its depth) cannot be shown within the disk budget: the agent pauses before its
// next step, saying why and the fix, stays paused while that holds, and resumes once a
// person removed them.
func TestAgentWhoseWorkspaceCannotBeMeasuredPauses(t *testing.T) {
	h := newHarness(t, withShell(t), func(o *Options) { o.MaxDisk = config.Size(64 << 20) })
	h.fake.Script(shellReply(nestDeep("echo nested")))
	listForever(h)
	a := autoAgent(h, 10)
	h.approve(a.ID, "execute_shell")
	got := pausedByBudget(h, a.ID)
	for _, want := range []string{"could not be measured", "within its disk budget of 64 MiB", "nested deeper than 2048", "rm -rf d", a.Workspace, "`agentctl resume tester`", "agentctl budget tester --max-disk 0"} {
		if !strings.Contains(got.StateReason, want) {
			t.Errorf("reason %q: want it to say %q", got.StateReason, want)
		}
	}
	if got.StepsTotal != 1 {
		t.Errorf("%d steps; want the pause before the second", got.StepsTotal)
	}
	if _, err := h.sup.runs.Resume(context.Background(), a.ID); !errors.Is(err, api.ErrConflict) || !strings.Contains(err.Error(), "could not be measured") {
		t.Errorf("resume while it cannot be measured: %v, want a conflict saying so", err)
	}
	if err := os.RemoveAll(filepath.Join(a.Workspace, "d")); err != nil {
		t.Fatal(err)
	}
	if _, err := h.sup.runs.Resume(context.Background(), a.ID); err != nil {
		t.Fatalf("resume once the folders went: %v; want it measured again and resumed", err)
	}
	h.waitFor(a.ID, "steps past the pause", func(a *api.Agent) bool { return a.StepsTotal >= 3 })
}

// A command that makes its workspace beyond what the disk walk can count while it runs
// is cut then, its result saying why, rather than left to write unmeasured.
func TestCommandCutWhenItsWorkspaceCannotBeMeasured(t *testing.T) {
	// The folders count 16.4 MiB (a block and an inode each, as the file system counts
	// them), under the budget, so that a walk while they are made does not cut for the
	// size; the file written after them takes the file system past it, and the walk that
	// follows cannot count them.
	h := newHarness(t, withShell(t), func(o *Options) { o.MaxDisk = config.Size(24 << 20) })
	h.fake.Script(shellReply(nestDeep("head -c 16777216 /dev/zero > big; sleep 120 && echo finished")))
	listForever(h)
	a := autoAgent(h, 10)
	h.approve(a.ID, "execute_shell")
	pausedByBudget(h, a.ID)
	eps := h.history(a.ID)
	if len(eps) != 1 || !strings.Contains(eps[0].Result, "cut off: its workspace could not be measured while it ran") ||
		!strings.Contains(eps[0].Result, "rm -rf d") || strings.Contains(eps[0].Result, "finished") {
		t.Fatalf("history %+v; want the command cut, saying why and the fix", eps)
	}
}
