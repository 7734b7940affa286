package agent

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/daemon/agent/cycle"
	"github.com/agentd/agentd/daemon/run"
	"github.com/agentd/agentd/daemon/store"
)

// Budgets bound a run (steps, tokens, wall time: run_budgets.go) and an agent over all
// its runs (steps, tokens, busy time, disk: agent_budget.go). Whatever spends them — a
// step, the model's tokens, a run's timer, a step cut by the agent's time — the loop
// reads their one verdict with each round (budgets.over), cycle.NextMove turns it into
// its scope's event, and endOverBudget carries that out through the applier.

// budgets owns the budgets of both scopes: those of the runs in progress that have one
// (run_budgets.go), cached with the timer that ends each run when its time is up, and
// each agent's over all its runs (agent_budget.go), laid over one another from the
// config's [agent], its [agents.NAME] and what `agentctl budget` stored (run.Budget.With).
// mu guards byRun only and is never held while calling out (timeUp runs on a timer's
// goroutine).
type budgets struct {
	st        *store.Store
	base      run.Budget                // Options.AgentBudget
	overrides map[string]AgentOverrides // Options.Agents
	timeUp    func(runID string)        // a run's wall-time budget is spent (runs.timeUp)
	// mutateAgent changes an agent under its runner's lock (Supervisor.mutate).
	mutateAgent func(ctx context.Context, ref string, fn func(tx *store.Tx, a *store.Agent) error) (*api.Agent, error)
	// remeasure measures an agent's workspace again when it is over its disk budget
	// (runs.remeasure), so that a budget raised or files removed count at once.
	remeasure func(ctx context.Context, ref string)
	walks     diskWalks // the last walk of each agent's workspace (disk_budget.go)
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

// endOverBudget carries out a round's budget verdict on the agent of run runID: a run's
// ends the run (like stop: an open proposal is superseded, a started one withdrawn), the
// agent's pauses it with nothing lost. The verdict is read again in the transaction and
// weighed by the cycle once more: a budget raised or a run replaced meanwhile moves
// nothing. Over the disk budget, the workspace is measured again first.
func (r *runner) endOverBudget(ctx context.Context, runID string, o *cycle.Over) {
	if o.Scope == cycle.AgentScope && o.Budget == "disk" {
		r.s.runs.remeasure(ctx, r.id)
	}
	var v *api.Agent
	var ex *exhausted
	r.mu.Lock()
	err := r.s.st.Tx(ctx, func(tx *store.Tx) error {
		v, ex = nil, nil // a retried transaction starts over
		a, err := tx.Agent(r.id)
		if err != nil || a.RunID != runID || !active(a.State) {
			return err // ended or replaced meanwhile
		}
		p, err := orNone(tx.OpenProposal(a.ID))
		if err != nil {
			return err
		}
		round := cycle.Round{Agent: a.State, Over: r.s.budgets.over(a)}
		if p != nil {
			round.Proposal = p.Status
		}
		if round.Over == nil || cycle.NextMove(round).Event != round.Over.Event() {
			return nil // under it again, or it waits for the open proposal: the loop goes on
		}
		ev, x := r.s.budgets.overEvent(a, round.Over)
		r.s.episodeHistory.storeWith(tx, a)
		c := &change{a: a, p: p, ev: ev, exhausted: x, pub: r.s.events.Publish}
		if res, err := applyShown(tx, c); err != nil || !res.moved {
			return err
		}
		v, ex = c.shown, x // the applier publishes it once this commits
		return nil
	})
	r.mu.Unlock()
	if err != nil {
		if !errors.Is(err, store.ErrNotFound) {
			r.s.log.Error("carrying out a budget's end", "agent", r.id, "run", runID, "err", err)
			r.sleep(ctx, time.Second)
		}
		return
	}
	if v == nil {
		return
	}
	r.s.metrics.BudgetExhausted(ex.Scope, ex.Kind)
	if ex.Scope == api.BudgetScopeAgent {
		r.s.log.Info("agent paused: its budget ran out", "agent", r.id, "budget", ex.Kind, "reason", ex.why)
		return
	}
	r.s.log.Info("run stopped: budget exhausted", "agent", r.id, "run", runID, "reason", ex.why)
	r.s.runs.runEnded(runID)
}

// armBusyBudget bounds the step the loop is about to take by what the agent's time
// budget leaves, as a run's wall-time budget bounds it: when that runs out, a model call
// or a command in flight is cancelled. done ends the bound and, when it cut the step,
// charges the budget as used up (the step ran until the budget's end; the time between
// steps is not counted otherwise), so the loop pauses the agent next.
func (r *runner) armBusyBudget(ctx context.Context) (done func()) {
	if r.busyLeft <= 0 {
		return func() {}
	}
	r.busyCut.Store(false)
	t := time.AfterFunc(r.busyLeft, func() {
		r.busyCut.Store(true)
		r.mu.Lock()
		r.cancelAll()
		r.mu.Unlock()
	})
	return func() {
		t.Stop()
		if r.busyCut.Swap(false) && ctx.Err() == nil {
			r.chargeCut(ctx)
		}
	}
}

// chargeCut raises the agent's busy time to its time budget after a step it cut.
func (r *runner) chargeCut(ctx context.Context) {
	r.mu.Lock()
	defer r.mu.Unlock()
	err := r.s.st.Tx(ctx, func(tx *store.Tx) error {
		a, err := tx.Agent(r.id)
		if err != nil {
			return err
		}
		if b := r.s.budgets.agentBudget(a); b.MaxWall > 0 {
			a.BusyMS = max(a.BusyMS, b.MaxWall.Milliseconds())
		}
		return tx.UpdateAgent(a)
	})
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		r.s.log.Error("charging a step cut by the time budget", "agent", r.id, "err", err)
	}
}
