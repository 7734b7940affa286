package agent

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/commands/permission"
	"github.com/agentd/agentd/daemon/agent/cycle"
	"github.com/agentd/agentd/daemon/run"
	"github.com/agentd/agentd/daemon/store"
)

// exhaust ends the agent's run runID because its budget (steps, tokens or time) ran
// out. Like Stop, an open proposal is superseded and a question withdrawn; the agent
// goes idle.
func (r *runner) exhaust(ctx context.Context, runID, budget, why string) {
	var v *api.Agent
	ex := &api.BudgetExhausted{Scope: api.BudgetScopeRun, Kind: budget, RunID: runID}
	if rb := r.s.runBudgets.budgetOf(runID); rb != nil { // dropped only once the end is published
		ex.Budget = budgetWire(rb.Budget)
	}
	r.mu.Lock()
	err := r.s.st.Tx(ctx, func(tx *store.Tx) error {
		a, err := tx.Agent(r.id)
		if err != nil {
			return err
		}
		if a.RunID != runID || !active(a.State) {
			return nil // ended or replaced meanwhile
		}
		// Like Stop: an open proposal is superseded, a started one withdrawn.
		p, err := tx.OpenProposal(a.ID)
		if errors.Is(err, store.ErrNotFound) {
			p, err = nil, nil
		} else if err != nil {
			return err
		}
		if err := tx.ClearQuestions(a.ID); err != nil {
			return err
		}
		ev := cycle.Event{Kind: cycle.RunBudgetHit, Reason: "budget exhausted: " + why, Detail: why, Result: "withdrawn: the run's budget ran out"}
		if _, _, err := transit(tx, a, p, ev); err != nil {
			return err
		}
		a.Policy.AutoSteps = 0
		if a.Policy.Mode == "auto" {
			a.Policy.Mode = "ask"
		}
		if err := tx.Audit(a.ID, string(api.RunBudgetExhausted), map[string]string{"run": runID, "reason": why}); err != nil {
			return err
		}
		r.s.episodeHistory.storeWith(tx, a)
		if err := tx.UpdateAgent(a); err != nil {
			return err
		}
		v = known(a, nil, nil)
		return nil
	})
	if err == nil && v != nil {
		r.s.events.Publish(api.Event{Type: api.EventState, AgentID: r.id, Agent: v, Exhausted: ex})
		r.s.events.Publish(api.Event{Type: api.EventFinish, AgentID: r.id, Agent: v, Message: v.StateReason, Exhausted: ex})
	}
	r.mu.Unlock()
	if err != nil {
		if !errors.Is(err, store.ErrNotFound) {
			r.s.log.Error("ending a run over budget", "agent", r.id, "run", runID, "err", err)
			r.sleep(ctx, time.Second)
		}
		return
	}
	if v != nil {
		r.s.metrics.BudgetExhausted("run", budget)
		r.s.log.Info("run stopped: budget exhausted", "agent", r.id, "run", runID, "reason", why)
		r.s.runs.runEnded(runID)
	}
}

// checkRunOptions validates opt and returns its patterns in canonical form.
func checkRunOptions(opt *run.Options) ([]string, error) {
	b := opt.Budget
	if b.MaxSteps < 0 || b.MaxTokens < 0 || b.MaxWall < 0 {
		return nil, badRequest("budgets cannot be negative")
	}
	if opt.Policy != nil {
		if err := checkPolicy(*opt.Policy); err != nil {
			return nil, err
		}
	}
	var pats []string
	for _, p := range opt.Allow {
		pat, err := permission.Parse(p)
		if err != nil {
			return nil, badRequest("allow pattern: %v", err)
		}
		pats = append(pats, pat.String())
	}
	return pats, nil
}

// requestOptions are the run options of an API request's budget: nil when it sets none.
func requestOptions(b *api.Budget) (*run.Options, error) {
	if b == nil || *b == (api.Budget{}) {
		return nil, nil
	}
	switch {
	case b.MaxSteps < 0:
		return nil, badRequest("budget max_steps %d: want 0 (no bound) or more", b.MaxSteps)
	case b.MaxTokens < 0:
		return nil, badRequest("budget max_tokens %d: want 0 (no bound) or more", b.MaxTokens)
	}
	opt := &run.Options{Budget: run.Budget{MaxSteps: b.MaxSteps, MaxTokens: b.MaxTokens}, By: "the request"}
	if t := strings.TrimSpace(b.MaxTime); t != "" {
		d, err := time.ParseDuration(t)
		if err != nil || d < time.Second {
			return nil, badRequest("budget max_time %q: want a duration of at least 1s such as 30m or 1h30m", b.MaxTime)
		}
		opt.Budget.MaxWall = d
	}
	return opt, nil
}

// applyRunOptions stores the run's budget and the agent's patterns in tx.
func applyRunOptions(tx *store.Tx, a *store.Agent, opt *run.Options, pats []string) error {
	if !opt.Budget.IsZero() {
		if err := tx.SetRunBudget(a.RunID, opt.Budget.MaxSteps, opt.Budget.MaxTokens, opt.Budget.MaxWall); err != nil {
			return err
		}
	}
	for _, p := range pats {
		if _, err := tx.AddPermission(a.ID, "allow", p, opt.By); err != nil {
			return err
		}
	}
	return nil
}
