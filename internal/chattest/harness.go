package chattest

import (
	"context"

	"github.com/agentd/agentd/bots"
)

// Held is a Daemon.Wrap for the scenario harnesses: a HoldingRelay (LateReply holds a
// message back) before the relay, and a HandledRelay (edits are waited for) before that.
func Held() (wrap func(bots.Handler) bots.Handler, held *HoldingRelay, handled *HandledRelay) {
	held, handled = &HoldingRelay{}, NewHandled()
	return func(r bots.Handler) bots.Handler {
		held.Handler, handled.Handler = r, held
		return handled
	}, held, handled
}

// Start runs a bot (its Run) until the returned cancel, and closes ran when Run has
// returned: what CheckRunLeavesNoHandlers takes.
func (s *SlowRelay) Start(run func(context.Context) error) (cancel context.CancelFunc, ran <-chan struct{}) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); run(ctx) }()
	return cancel, done
}
