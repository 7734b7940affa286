package agent

import (
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/daemon/metrics"
	"github.com/agentd/agentd/daemon/store"
)

// Metrics is what the supervisor reports as it works; *metrics.Metrics implements it.
// Every count follows a committed transaction, so a rolled-back step counts nothing; a
// command's duration is reported as it ends, since it ran whatever is recorded after.
type Metrics interface {
	Step(outcome string)
	Decision(kind, source, by string)
	BudgetExhausted(scope, budget string)
	Loop(kind, action string)
	// Command is told how long each command ran and its outcome (succeeded, failed).
	Command(name, outcome string, d time.Duration)
}

var _ Metrics = (*metrics.Metrics)(nil)

type noMetrics struct{}

func (noMetrics) Step(string)                           {}
func (noMetrics) Decision(string, string, string)       {}
func (noMetrics) BudgetExhausted(string, string)        {}
func (noMetrics) Loop(string, string)                   {}
func (noMetrics) Command(string, string, time.Duration) {}

// stepCounters reports steps and decisions to Metrics once their transaction commits.
type stepCounters struct{ metrics Metrics }

// countDecision reports d once tx commits.
func (s *stepCounters) countDecision(tx *store.Tx, d *api.Decision) {
	tx.AfterCommit(func() { s.metrics.Decision(string(d.Kind), d.Source, d.By) })
}

// countStep reports a step's outcome once tx commits.
func (s *stepCounters) countStep(tx *store.Tx, outcome string) {
	tx.AfterCommit(func() { s.metrics.Step(outcome) })
}
