package bots

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentd/agentd/internal/backoff"
)

// Connection states a bot reports.
const (
	StateConnecting   = "connecting"
	StateConnected    = "connected"
	StateReconnecting = "reconnecting"
	StateStopped      = "stopped"
)

// Status is a bot's connection to its platform, shown by agentctl status and doctor.
type Status struct {
	Platform string
	State    string
	// Since is when State began.
	Since time.Time
	// Attempt counts reconnect attempts since the connection was last up.
	Attempt int
	// Error is why the connection is down, when it is.
	Error string
}

// Connection keeps a bot's connection Status, one per bot; safe for concurrent use.
type Connection struct {
	mu       sync.Mutex
	st       Status
	onChange func(up bool)
}

// NewConnection is platform's connection, connecting from now. onChange, if set, is told
// each time the connection goes up (StateConnected) or down (any other state): metrics.
func NewConnection(platform string, onChange func(up bool)) *Connection {
	return &Connection{st: Status{Platform: platform, State: StateConnecting, Since: time.Now()}, onChange: onChange}
}

// Status reports the connection's state.
func (c *Connection) Status() Status {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.st
}

// Set records state (since now, when it changed), the reconnect attempt and why the
// connection is down (err, or nil); it returns the state before.
func (c *Connection) Set(state string, attempt int, err error) (was string) {
	c.mu.Lock()
	defer func() {
		c.mu.Unlock()
		if up := state == StateConnected; (was == StateConnected) != up && c.onChange != nil {
			c.onChange(up)
		}
	}()
	was = c.st.State
	if was != state {
		c.st.Since = time.Now()
	}
	c.st.State, c.st.Attempt, c.st.Error = state, attempt, ""
	if err != nil {
		c.st.Error = err.Error()
	}
	return was
}

// Keep keeps the connection up until ctx ends: dial opens it and session holds it until
// it drops, each saying why it failed (and logging it, in its platform's words). A failed
// dial or a drop is retried after wait(attempt), counting the attempts since the
// connection was last up. It returns, stopped, once ctx ends.
func (c *Connection) Keep(ctx context.Context, wait func(attempt int) time.Duration, dial, session func(context.Context) error) {
	for attempt := 1; ctx.Err() == nil; attempt++ {
		err := dial(ctx)
		if err == nil {
			attempt = 1
			if err = session(ctx); ctx.Err() != nil {
				break
			}
		}
		c.Set(StateReconnecting, attempt, err)
		backoff.Sleep(ctx, wait(attempt))
	}
	c.Set(StateStopped, 0, nil)
}

// StatusReporter is an adapter that reports its connection.
type StatusReporter interface {
	Status() Status
}

// Statuses returns the connection of every adapter that reports one, by platform name.
func (r *Relay) Statuses() []Status {
	var out []Status
	for _, ep := range r.eps.all() {
		if sr, ok := ep.a.(StatusReporter); ok {
			out = append(out, sr.Status())
		}
	}
	slices.SortFunc(out, func(a, b Status) int { return strings.Compare(a.Platform, b.Platform) })
	return out
}
