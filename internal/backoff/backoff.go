// Package backoff is the one retry wait of the daemon and its front ends: the model
// client and pool, the agents' waits on the model, team turns, the chat bots' reconnects
// and outbox, MCP server restarts and agentctl's event stream all space their retries
// with a Policy. It is a leaf: it imports only the standard library.
package backoff

import (
	"context"
	"math/rand/v2"
	"time"
)

// Policy spaces retries: Base, 2·Base, 4·Base, … capped at Max, each moved by up to
// ±Jitter (a fraction) so that many waiters on one server do not retry in lockstep.
type Policy struct {
	Base   time.Duration
	Max    time.Duration
	Jitter float64
	// Rand returns a number in [0, 1); nil means math/rand/v2's Float64. Tests inject it.
	Rand func() float64
}

// Next returns the wait before retry attempt n (n ≥ 1; smaller n counts as 1).
func (p Policy) Next(attempt int) time.Duration {
	d := p.Base
	for i := 1; i < attempt && d < p.Max; i++ {
		d *= 2
	}
	if p.Max > 0 && d > p.Max {
		d = p.Max
	}
	if p.Jitter <= 0 {
		return d
	}
	r := rand.Float64
	if p.Rand != nil {
		r = p.Rand
	}
	return time.Duration(float64(d) * (1 + p.Jitter*(2*r()-1)))
}

// Sleep waits d, or until ctx ends, whichever comes first; it reports false when ctx
// ended first.
func Sleep(ctx context.Context, d time.Duration) bool { return SleepOr(ctx, d, nil, nil) }

// SleepOr is Sleep that also ends early, reporting true, when wake sends or done closes
// (either may be nil): an agent woken by a person, a model's host back in the pool.
func SleepOr(ctx context.Context, d time.Duration, wake <-chan struct{}, done <-chan struct{}) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-wake:
	case <-done:
	case <-ctx.Done():
		return false
	}
	return true
}
