package llm

import (
	"math/rand/v2"
	"time"
)

// Backoff computes waits between retries while the model server is unavailable:
// Base, 2·Base, 4·Base, … capped at Max, each moved by up to ±Jitter (a fraction) so that
// many agents waiting on one server do not retry in lockstep.
type Backoff struct {
	Base   time.Duration
	Max    time.Duration
	Jitter float64
	// Rand returns a number in [0, 1); nil means math/rand/v2's Float64. Tests inject it.
	Rand func() float64
}

// DefaultBackoff is 1s, 2s, 4s, … 30s with ±20% jitter.
var DefaultBackoff = Backoff{Base: time.Second, Max: 30 * time.Second, Jitter: 0.2}

// NextBackoff returns DefaultBackoff's wait before retry attempt n (n ≥ 1; smaller n counts as 1).
func NextBackoff(attempt int) time.Duration { return DefaultBackoff.Next(attempt) }

// Next returns the wait before retry attempt n (n ≥ 1; smaller n counts as 1).
func (b Backoff) Next(attempt int) time.Duration {
	d := b.Base
	for i := 1; i < attempt && d < b.Max; i++ {
		d *= 2
	}
	if b.Max > 0 && d > b.Max {
		d = b.Max
	}
	if b.Jitter <= 0 {
		return d
	}
	r := rand.Float64
	if b.Rand != nil {
		r = b.Rand
	}
	return time.Duration(float64(d) * (1 + b.Jitter*(2*r()-1)))
}
