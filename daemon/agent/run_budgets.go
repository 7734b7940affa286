package agent

import (
	"context"
	"fmt"
	"time"

	"github.com/agentd/agentd/daemon/agent/cycle"
	"github.com/agentd/agentd/daemon/run"
	"github.com/agentd/agentd/daemon/store"
	"github.com/agentd/agentd/internal/display"
)

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
