package agent

import (
	"context"
	"errors"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/daemon/agent/cycle"
	"github.com/agentd/agentd/daemon/store"
)

// What the loop does when a budget runs out (budgets.go holds them and their verdict):
// endOverBudget ends the run or pauses the agent through the applier, and the agent's
// time budget bounds each step it takes (armBusyBudget).

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
	err := r.update(ctx, func(tx *store.Tx, a *store.Agent) error {
		v, ex = nil, nil // a retried transaction starts over
		if a.RunID != runID || !active(a.State) {
			return nil // ended or replaced meanwhile
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
		// Set under mu: a model call or command armed after this sees it and is cut at
		// once (on a loaded machine the budget can run out before the step reaches them).
		r.mu.Lock()
		r.busyCut.Store(true)
		r.cancelAll()
		r.mu.Unlock()
	})
	return func() {
		t.Stop()
		if !r.busyCut.Swap(false) || ctx.Err() != nil {
			return
		}
		// The step it cut raises the agent's busy time to its time budget.
		err := r.update(ctx, func(tx *store.Tx, a *store.Agent) error {
			if b := r.s.budgets.agentBudget(a); b.MaxWall > 0 {
				a.BusyMS = max(a.BusyMS, b.MaxWall.Milliseconds())
			}
			return tx.UpdateAgent(a)
		})
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			r.s.log.Error("charging a step cut by the time budget", "agent", r.id, "err", err)
		}
	}
}
