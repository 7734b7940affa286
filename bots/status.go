package bots

import (
	"slices"
	"strings"
	"time"
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
