package chattest

import (
	"context"
	"testing"

	"github.com/agentd/agentd/bots"
)

// ForScenarios readies d for the scenario harnesses: the echo command, the build team,
// and before the relay a HoldingRelay (LateReply holds a message back) with a
// HandledRelay (edits are waited for) before that.
func (d *Daemon) ForScenarios(t testing.TB) (held *HoldingRelay, handled *HandledRelay) {
	held, handled = &HoldingRelay{}, NewHandled()
	d.Commands = append(d.Commands, EchoCommand)
	d.Wrap = func(r bots.Handler) bots.Handler {
		held.Handler, handled.Handler = r, held
		return handled
	}
	d.WithTeams(t, map[string]string{})
	return held, handled
}

// Start runs a bot (its Run) until the returned cancel, and closes ran when Run has
// returned: what CheckRunLeavesNoHandlers takes.
func (s *SlowRelay) Start(run func(context.Context) error) (cancel context.CancelFunc, ran <-chan struct{}) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); run(ctx) }()
	return cancel, done
}
