package agent

import (
	"context"
	"fmt"
	"sync"
	"time"

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

// overTime returns why the run is out of wall time, or "".
func (b *runBudget) overTime(now time.Time) string {
	if b.MaxWall > 0 && now.Sub(b.start) >= b.MaxWall {
		return fmt.Sprintf("the run used its time budget of %v", b.MaxWall)
	}
	return ""
}

// overCount returns which budget (steps or tokens) keeps the run from making another
// proposal, and why; "" when none does.
func (b *runBudget) overCount(a *store.Agent) (budget, why string) {
	if b.MaxSteps > 0 && a.Step >= b.MaxSteps {
		return "steps", fmt.Sprintf("the run made %s, its step budget", display.Count(a.Step, "step", "steps"))
	}
	if used := a.PromptTokens + a.EvalTokens - b.tokensBase; b.MaxTokens > 0 && used >= b.MaxTokens {
		return "tokens", fmt.Sprintf("the run used %d model tokens, over its token budget of %d", used, b.MaxTokens)
	}
	return "", ""
}

// runBudgets holds the budgets of the runs in progress that have one, with the timer that
// ends each run when its time is up. mu guards byRun only and is never held while calling
// out (timeUp runs on the timer's goroutine).
type runBudgets struct {
	st     *store.Store
	timeUp func(runID string) // a run's wall-time budget is spent
	mu     sync.Mutex
	byRun  map[string]*runBudget // by run ID
}

// setBudget caches runID's budget and arms its wall-time timer.
func (s *runBudgets) setBudget(runID, agentID string, b run.Budget, start time.Time, tokensBase int64) {
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

func (s *runBudgets) budgetOf(runID string) *runBudget {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.byRun[runID]
}

func (s *runBudgets) dropBudget(runID string) {
	s.mu.Lock()
	if b := s.byRun[runID]; b != nil && b.timer != nil {
		b.timer.Stop()
	}
	delete(s.byRun, runID)
	s.mu.Unlock()
}

// loadBudgets caches the budgets of runs in progress (at start).
func (s *runBudgets) loadBudgets(ctx context.Context) error {
	var runs []store.Run
	err := s.st.View(ctx, func(tx *store.Tx) (err error) { runs, err = tx.BudgetedRuns(); return err })
	for _, r := range runs {
		s.setBudget(r.ID, r.AgentID, run.Budget{MaxSteps: r.MaxSteps, MaxTokens: r.MaxTokens, MaxWall: r.MaxWall}, r.Started, r.TokensBase)
	}
	return err
}
