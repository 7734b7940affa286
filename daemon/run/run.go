// Package run holds what the daemon's runs share, whoever starts them: a run's Budget and
// Options, how it ended (End, with its outcome), the model settings team turns follow
// (ModelSettings), and the event Broker that fans events out to followers.
//
// It is a leaf: it imports only daemon/api. The agent supervisor (daemon/agent) runs
// runs; team runs (daemon/team) and schedules (daemon/schedule) start them and hear how
// they ended through these types, so neither imports the supervisor's package.
package run

import (
	"time"

	"github.com/agentd/agentd/api"
)

// Budget bounds one run; a zero field sets no bound. A run that reaches one stops
// cleanly: its proposal (if any) is superseded, the agent goes idle, and the run ends
// with the outcome budget_exhausted and a reason naming the budget.
type Budget struct {
	MaxSteps  int           // proposals the run may make
	MaxTokens int64         // model tokens (prompt and reply) over the run
	MaxWall   time.Duration // wall time from the run's start
	// MaxDisk bounds, in bytes, the disk an agent's workspace takes: agents' own
	// budgets only, as a run has no workspace of its own.
	MaxDisk int64
}

// With is b with the fields a source sets replaced (nil: kept), so that every source of
// an agent's budget — [agents.NAME] over [agent], `agentctl budget` over both — is laid
// over the one before it the same way.
func (b Budget) With(steps *int, tokens *int64, wall *time.Duration, disk *int64) Budget {
	if steps != nil {
		b.MaxSteps = *steps
	}
	if tokens != nil {
		b.MaxTokens = *tokens
	}
	if wall != nil {
		b.MaxWall = *wall
	}
	if disk != nil {
		b.MaxDisk = *disk
	}
	return b
}

// IsZero reports whether b bounds nothing.
func (b Budget) IsZero() bool { return b == Budget{} }

// Options are what a run started by the daemon itself (a schedule, a team turn, any
// caller of the supervisor's StartTask or CreateRun) carries beyond its task.
type Options struct {
	Budget Budget
	// Policy, when set, replaces the agent's policy for the run.
	Policy *api.Policy
	// Allow are permission patterns stored for the agent (like `agentctl policy allow`).
	Allow []string
	// By names who started the run, for the audit log and stored patterns; Source is
	// where from (schedule, team, api), for the grant its Policy's auto steps make.
	By     string
	Source string
	// Observation is what a check found before the run started (a schedule's wake
	// check): the run's first step records it, so the model starts from it as from a
	// command it ran.
	Observation string
}

// End is how a run ended, as the supervisor's OnRunEnd reports it.
type End struct {
	RunID, AgentID string
	// Outcome is the run's outcome as stored: finished, denied, stopped,
	// budget_exhausted, or removed (the agent was deleted).
	Outcome api.RunOutcome
	Reason  string
	Steps   int
	Tokens  int64
}

// ModelSettings are the model parameters of the supervisor's live settings that other
// model callers (team turns) follow, read at each call so a config reload reaches them.
type ModelSettings struct {
	Model      string // the fast model
	MaxContext int    // caps num_ctx
	KeepAlive  *time.Duration
}
