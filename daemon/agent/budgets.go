package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/daemon/agent/cycle"
	"github.com/agentd/agentd/daemon/config"
	"github.com/agentd/agentd/daemon/run"
	"github.com/agentd/agentd/daemon/store"
	"github.com/agentd/agentd/internal/display"
)

// Budgets bound a run (steps, tokens, wall time) and an agent over all its runs (steps,
// tokens, busy time, disk: below). Whatever spends them — a step, the model's
// tokens, a run's timer, a step cut by the agent's time — the loop reads their one
// verdict with each round (budgets.over), cycle.NextMove turns it into its scope's event,
// and endOverBudget (budget.go) carries that out through the applier.

// budgets owns the budgets of both scopes: those of the runs in progress that have one,
// cached with the timer that ends each run when its time is up, and each agent's over
// all its runs, laid over one another from the
// config's [agent], its [agents.NAME] and what `agentctl budget` stored (run.Budget.With).
// mu guards byRun only and is never held while calling out (timeUp runs on a timer's
// goroutine).
type budgets struct {
	st        *store.Store
	base      run.Budget                      // [agent]'s, as the supervisor started
	overrides map[string]config.AgentOverride // Options.Agents
	timeUp    func(runID string)              // a run's wall-time budget is spent (runs.timeUp)
	// mutateAgent changes an agent under its runner's lock (Supervisor.mutate).
	mutateAgent func(ctx context.Context, ref string, fn func(tx *store.Tx, a *store.Agent) error) (*api.Agent, error)
	// remeasure measures an agent's workspace again when it is over its disk budget
	// (runs.remeasure), so that a budget raised or files removed count at once.
	remeasure func(ctx context.Context, ref string)
	walks     diskWalks // the last walk of each agent's workspace (diskWalks, below)
	mu        sync.Mutex
	byRun     map[string]*runBudget // by run ID
}

// over is the budgets' one verdict on a: the first of its run's wall time, its run's
// steps and tokens, and its own budgets that ran out; nil while all hold.
func (s *budgets) over(a *store.Agent) *cycle.Over {
	if b := s.budgetOf(a.RunID); b != nil {
		if budget, why := b.over(a, time.Now()); why != "" {
			return &cycle.Over{Scope: cycle.RunScope, Budget: budget, Why: why}
		}
	}
	if budget, why := s.agentOver(a); why != "" {
		return &cycle.Over{Scope: cycle.AgentScope, Budget: budget, Why: why}
	}
	return nil
}

// overEvent is the event verdict o makes on a, and what it records.
func (s *budgets) overEvent(a *store.Agent, o *cycle.Over) (cycle.Event, *exhausted) {
	ex := &exhausted{BudgetExhausted: api.BudgetExhausted{Scope: string(o.Scope), Kind: o.Budget, RunID: a.RunID}, why: o.Why}
	if o.Scope == cycle.AgentScope {
		ex.Budget = *s.budgetView(a)
		return cycle.Event{Kind: o.Event(), Reason: agentBudgetReason + o.Why}, ex
	}
	if rb := s.budgetOf(a.RunID); rb != nil { // dropped only once the end is published
		ex.Budget = budgetWire(rb.Budget)
	}
	return cycle.Event{Kind: o.Event(), Reason: "budget exhausted: " + o.Why, Detail: o.Why, Result: "withdrawn: the run's budget ran out"}, ex
}

// runBudget is a budget cached for a run in progress, so the step path checks it
// without a query: the agent row it reads anyway has the step and token counts.
type runBudget struct {
	run.Budget
	agentID    string
	start      time.Time
	tokensBase int64 // the agent's token total when the run started
	timer      *time.Timer
}

// over returns which of the run's budgets is used up (its wall time, or the steps and
// tokens that keep it from making another proposal) and why; "" when none is.
func (b *runBudget) over(a *store.Agent, now time.Time) (budget, why string) {
	used := a.PromptTokens + a.EvalTokens - b.tokensBase
	switch {
	case b.MaxWall > 0 && now.Sub(b.start) >= b.MaxWall:
		return cycle.TimeBudget, fmt.Sprintf("the run used its time budget of %v", b.MaxWall)
	case b.MaxSteps > 0 && a.Step >= b.MaxSteps:
		return "steps", fmt.Sprintf("the run made %s, its step budget", display.Count(a.Step, "step", "steps"))
	case b.MaxTokens > 0 && used >= b.MaxTokens:
		return "tokens", fmt.Sprintf("the run used %d model tokens, over its token budget of %d", used, b.MaxTokens)
	}
	return "", ""
}

// setBudget caches runID's budget and arms its wall-time timer.
func (s *budgets) setBudget(runID, agentID string, b run.Budget, start time.Time, tokensBase int64) {
	if b.IsZero() {
		return
	}
	rb := &runBudget{Budget: b, agentID: agentID, start: start, tokensBase: tokensBase}
	if b.MaxWall > 0 {
		rb.timer = time.AfterFunc(max(time.Until(start.Add(b.MaxWall)), 0), func() { s.timeUp(runID) })
	}
	s.mu.Lock()
	if old := s.byRun[runID]; old != nil && old.timer != nil {
		old.timer.Stop()
	}
	s.byRun[runID] = rb
	s.mu.Unlock()
}

func (s *budgets) budgetOf(runID string) *runBudget {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.byRun[runID]
}

func (s *budgets) dropBudget(runID string) {
	s.mu.Lock()
	if b := s.byRun[runID]; b != nil && b.timer != nil {
		b.timer.Stop()
	}
	delete(s.byRun, runID)
	s.mu.Unlock()
}

// loadBudgets caches the budgets of runs in progress (at start).
func (s *budgets) loadBudgets(ctx context.Context) error {
	var runs []store.Run
	err := s.st.View(ctx, func(tx *store.Tx) (err error) { runs, err = tx.BudgetedRuns(); return err })
	for _, r := range runs {
		s.setBudget(r.ID, r.AgentID, run.Budget{MaxSteps: r.MaxSteps, MaxTokens: r.MaxTokens, MaxWall: r.MaxWall}, r.Started, r.TokensBase)
	}
	return err
}

// An agent's own budget bounds it over all its runs: steps (proposals), model tokens,
// and busy time (thinking and executing, not waiting for people). The config sets a
// default ([agent]) and per-agent values ([agents.NAME]); `agentctl budget` overrides
// them field by field. An agent that reaches one is paused before its next step, with
// nothing lost: its run, history and policy stay, and raising the budget resumes it.

// agentBudgetReason starts the state reason of an agent paused by its own budget; a
// raised budget resumes only agents paused for this reason.
const agentBudgetReason = "agent budget exhausted: "

// agentBudget is the budget bounding a: its own fields where set, else the config's.
func (s *budgets) agentBudget(a *store.Agent) run.Budget {
	b := s.base
	if ob, ok := s.overrides[a.Name].Budget(s.base); ok {
		b = ob
	}
	return b.With(a.Budget.MaxSteps, a.Budget.MaxTokens, a.Budget.MaxBusy, a.Budget.MaxDisk)
}

// agentOver returns which of a's own budgets is used up (steps, tokens, time or disk)
// and why, with the command that raises it; "" when none is.
func (s *budgets) agentOver(a *store.Agent) (budget, why string) {
	b := s.agentBudget(a)
	busy := time.Duration(a.BusyMS) * time.Millisecond
	switch {
	case b.MaxSteps > 0 && a.StepsTotal >= b.MaxSteps:
		return "steps", fmt.Sprintf("it made %s over its runs, its step budget: raise it with `agentctl budget %s --max-steps N`", display.Count(a.StepsTotal, "step", "steps"), a.Name)
	case b.MaxTokens > 0 && a.PromptTokens+a.EvalTokens >= b.MaxTokens:
		return "tokens", fmt.Sprintf("it used %d model tokens over its runs, its token budget is %d: raise it with `agentctl budget %s --max-tokens N`",
			a.PromptTokens+a.EvalTokens, b.MaxTokens, a.Name)
	case b.MaxWall > 0 && busy >= b.MaxWall:
		return "time", fmt.Sprintf("it was busy %v over its runs, its time budget is %v: raise it with `agentctl budget %s --max-time D`",
			busy.Round(time.Millisecond), b.MaxWall, a.Name)
	case overDisk(a, b.MaxDisk) != "":
		return "disk", overDisk(a, b.MaxDisk)
	case s.unmeasured(a) != "":
		return "disk", s.unmeasured(a)
	}
	return "", ""
}

// budgetView is a's budget as the API shows it.
func (s *budgets) budgetView(a *store.Agent) *api.Budget {
	out := budgetWire(s.agentBudget(a))
	return &out
}

// budgetWire is b as the API shows it.
func budgetWire(b run.Budget) api.Budget {
	out := api.Budget{MaxSteps: b.MaxSteps, MaxTokens: b.MaxTokens, MaxDisk: b.MaxDisk}
	if b.MaxWall > 0 {
		out.MaxTime = b.MaxWall.String()
	}
	return out
}

// SetBudget changes an agent's own budget (fields left nil are kept; Reset first goes
// back to the config's). An agent paused by its budget resumes when the new one allows.
func (s *budgets) SetBudget(ctx context.Context, ref string, req api.BudgetRequest) (*api.Agent, error) {
	if s.remeasure != nil {
		s.remeasure(ctx, ref)
	}
	var busy *time.Duration
	switch {
	case req.MaxDisk != nil && *req.MaxDisk < 0:
		return nil, badRequest("max_disk %d: want 0 (no bound) or more bytes", *req.MaxDisk)
	case req.MaxSteps != nil && *req.MaxSteps < 0:
		return nil, badRequest("max_steps %d: want 0 (no bound) or more", *req.MaxSteps)
	case req.MaxTokens != nil && *req.MaxTokens < 0:
		return nil, badRequest("max_tokens %d: want 0 (no bound) or more", *req.MaxTokens)
	case req.MaxTime != nil:
		d, err := time.ParseDuration(strings.TrimSpace(*req.MaxTime))
		if err != nil || d < 0 {
			return nil, badRequest("max_time %q: want a duration such as 90m or 2h, or 0 for no bound", *req.MaxTime)
		}
		busy = &d
	}
	var bv *api.Budget
	out, err := s.mutateAgent(ctx, ref, func(tx *store.Tx, a *store.Agent) error {
		if req.Reset {
			a.Budget = store.AgentBudget{}
		}
		if req.MaxSteps != nil {
			a.Budget.MaxSteps = req.MaxSteps
		}
		if req.MaxTokens != nil {
			a.Budget.MaxTokens = req.MaxTokens
		}
		if busy != nil {
			a.Budget.MaxBusy = busy
		}
		if req.MaxDisk != nil {
			a.Budget.MaxDisk = req.MaxDisk
		}
		bv = s.budgetView(a)
		if err := tx.Audit(a.ID, "budget", bv); err != nil {
			return err
		}
		if a.State == api.StatePaused && strings.HasPrefix(a.StateReason, agentBudgetReason) {
			if b, _ := s.agentOver(a); b == "" {
				if _, _, err := transit(tx, a, nil, cycle.Event{Kind: cycle.BudgetRaised}); err != nil {
					return err
				}
				if err := tx.Audit(a.ID, "resumed", map[string]string{"by": "a raised budget"}); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if out != nil {
		out.Budget = bv
	}
	return out, err
}

// diskWalks remembers, per agent, the last walk of its workspace.
type diskWalks struct {
	mu   sync.Mutex
	last map[string]diskWalk
}

type diskWalk struct {
	at     time.Time
	fsUsed int64 // fsUsed of the workspace's file system then
	took   time.Duration
	err    error // why the walk failed: the agent is over its disk budget until one succeeds
}

func (w *diskWalks) get(id string) (diskWalk, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	d, ok := w.last[id]
	return d, ok
}

func (w *diskWalks) set(id string, d diskWalk) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.last == nil {
		w.last = map[string]diskWalk{}
	}
	w.last[id] = d
}

// forget drops what is remembered of a removed agent.
func (w *diskWalks) forget(id string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.last, id)
}

// overDisk returns why a is over its disk budget b (bytes; 0 is none), or "".
func overDisk(a *store.Agent, b int64) string {
	if b <= 0 || a.DiskBytes <= b {
		return ""
	}
	return fmt.Sprintf("its workspace takes %s on disk, over its disk budget of %s: delete files in it (%s), "+
		"or raise the budget with `agentctl budget %s --max-disk SIZE` (or [agent] max_disk)",
		display.Size(a.DiskBytes), display.Size(b), a.Workspace, a.Name)
}

// The disk budget bounds what an agent's workspace takes on disk (its helpers', inside
// it, included): commands.DiskUsage, measured after each command that may write and
// stored with its result (client.Agent.DiskBytes). An agent over it pauses before its
// next step, like any agent budget; a command that takes the workspace over it while
// it runs is cut (watchDisk). Freeing space and resuming, or raising the budget, lets
// the agent go on: the usage is measured again first.

// diskWatchEvery is how often a running command's file system is looked at.
const diskWatchEvery = time.Second

// A workspace whose walk costs more than cheapWalk (tens of thousands of files) is walked
// again after a command only when its file system grew by more than the budget leaves,
// or diskRewalk after the last walk: the file system's growth bounds what the command
// wrote, unless another writer freed space meanwhile, which the next walk finds.
const (
	cheapWalk  = 5 * time.Millisecond
	diskRewalk = 30 * time.Second
)

// previewRoom is the disk a's effect preview may take, its copy of the workspace and its
// store (effect.Previews.Run): what a's disk budget leaves beside its workspace, so an
// agent cannot double its disk by having its commands run ahead; 0 when a has no disk
// budget (the preview's own bound holds).
func (s *budgets) previewRoom(a *store.Agent) int64 {
	budget := s.agentBudget(a).MaxDisk
	if budget <= 0 {
		return 0
	}
	return max(budget-a.DiskBytes, 1) // none left: no preview
}

// diskAfter measures a's workspace after a command of class ran, when a has a disk
// budget and the command may have written; -1 when nothing was measured (see cheapWalk)
// or the walk failed, which keeps a over its budget until a walk succeeds (agentOver).
func (s *budgets) diskAfter(a *store.Agent, class commands.Class) int64 {
	budget := s.agentBudget(a).MaxDisk
	if budget <= 0 || class == commands.ClassRead || class == commands.ClassMessage {
		return -1
	}
	used, ok := commands.FSUsed(a.Workspace)
	if last, seen := s.walks.get(a.ID); ok && seen && last.err == nil && last.took > cheapWalk &&
		time.Since(last.at) < diskRewalk && used-last.fsUsed <= budget-a.DiskBytes {
		return -1
	}
	n, err := s.measureDisk(a.ID, a.Workspace, used)
	if err != nil {
		return -1
	}
	return n
}

// measureDisk walks agent id's workspace ws (commands.DiskUsage), whose file system had
// fsUsed in use, and remembers the walk, failed or not.
func (s *budgets) measureDisk(id, ws string, fsUsed int64) (int64, error) {
	start := time.Now()
	n, err := commands.DiskUsage(ws)
	s.walks.set(id, diskWalk{at: start, fsUsed: fsUsed, took: time.Since(start), err: err})
	return n, err
}

// unmeasured says why a's disk budget cannot be shown to hold, when the last walk of its
// workspace failed; "" when it did not or a has no disk budget. A workspace whose own path
// goes through a symlink is no reason: every command refuses it (the one path resolver)
// and says why, so nothing can spend disk there, and a helper so refused still ends.
func (s *budgets) unmeasured(a *store.Agent) string {
	budget := s.agentBudget(a).MaxDisk
	last, seen := s.walks.get(a.ID)
	if budget <= 0 || !seen || last.err == nil || errors.Is(last.err, commands.ErrWorkspaceLink) {
		return ""
	}
	return fmt.Sprintf("its workspace (%s) could not be measured, so it cannot be shown within its disk budget of %s: %v; "+
		"then `agentctl resume %s`, or remove the budget with `agentctl budget %s --max-disk 0`", a.Workspace, display.Size(budget), last.err, a.Name, a.Name)
}

// watchDisk bounds a command that runs long by a's disk budget; with none, it only
// measures it, so another agent's watch on the file system is not charged its writes (commands.WatchDisk every
// diskWatchEvery on its workspace, counting what the programs it runs under the returned
// context hold too), and cuts the command (cancel) once the workspace is over it. stop
// ends the watch and says why the command was cut, or "".
func (s *budgets) watchDisk(ctx context.Context, a *store.Agent, cancel func()) (context.Context, func() string) {
	budget, floor := s.agentBudget(a).MaxDisk, commands.DiskFloor
	if budget <= 0 { // it only measures: what it writes is no one else's unexplained growth
		budget, floor = 0, 0
	}
	var why string // set before the watch ends
	run := &commands.Programs{}
	end := commands.WatchDisk(a.Workspace, budget, floor, diskWatchEvery,
		func() (int64, error) { return run.DiskUsage(a.Workspace) }, run.Parks,
		func(n int64, err error) {
			why = fmt.Sprintf("its workspace grew to %s while it ran, over its disk budget of %s", display.Size(n), display.Size(budget))
			var ug *commands.ErrUnexplainedGrowth
			switch {
			case errors.As(err, &ug):
				why = fmt.Sprintf("its workspace grew to %s while it ran, and its file system by %s more that nothing agentd measures explains, over its disk budget of %s "+
					"(a program it ran may keep a file it deleted where no listing shows it, or another program on this host wrote there): "+
					"if that was another program, run it again; else raise the budget (`agentctl budget %s --max-disk SIZE`)", display.Size(n), display.Size(ug.Grew), display.Size(budget), a.Name)
			case err != nil:
				s.walks.set(a.ID, diskWalk{at: time.Now(), err: err}) // a is over its budget until a walk succeeds
				why = fmt.Sprintf("its workspace could not be measured while it ran, so it could not be shown within its disk budget of %s: %v", display.Size(budget), err)
			}
			cancel()
		})
	return commands.WithPrograms(ctx, run), func() string {
		end()
		return why
	}
}
