package bots

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// TestConnectionSetKeepsSinceWhileTheStateHolds: Set returns the state before, moves
// Since only when the state changes, clears the error once the connection is up, and
// tells onChange each time the connection goes up or down, once.
func TestConnectionSetKeepsSinceWhileTheStateHolds(t *testing.T) {
	var changes []bool
	c := NewConnection("slack", func(up bool) { changes = append(changes, up) })
	if st := c.Status(); st.Platform != "slack" || st.State != StateConnecting || st.Since.IsZero() {
		t.Fatalf("new connection = %+v", st)
	}
	if was := c.Set(StateReconnecting, 1, errors.New("socket closed")); was != StateConnecting {
		t.Errorf("Set returned %q, want %q", was, StateConnecting)
	}
	first := c.Status()
	if first.Attempt != 1 || first.Error != "socket closed" {
		t.Errorf("reconnecting = %+v", first)
	}
	c.Set(StateReconnecting, 2, errors.New("socket closed again"))
	if st := c.Status(); st.Since != first.Since || st.Attempt != 2 {
		t.Errorf("a second attempt moved Since or kept the attempt: %+v, first %+v", st, first)
	}
	if was := c.Set(StateConnected, 0, nil); was != StateReconnecting {
		t.Errorf("Set returned %q, want %q", was, StateReconnecting)
	}
	if st := c.Status(); st.State != StateConnected || st.Error != "" || st.Attempt != 0 {
		t.Errorf("connected = %+v", st)
	}
	c.Set(StateConnected, 0, nil)
	c.Set(StateConnecting, 0, nil)
	c.Set(StateStopped, 0, nil)
	if fmt.Sprint(changes) != "[true false]" {
		t.Errorf("onChange was told %v, want [true false]", changes)
	}
}

// TestConnectionKeepCountsAttemptsSinceLastUp: a failed dial and a dropped session are
// each retried after the backoff of their attempt, counted since the connection was last
// up; once ctx ends the connection is stopped and Keep returns.
func TestConnectionKeepCountsAttemptsSinceLastUp(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := NewConnection("discord", nil)
	dials := []error{errors.New("refused"), errors.New("refused"), nil, nil}
	var waited []int
	var states []string
	dial := func(context.Context) error {
		err := dials[0]
		dials = dials[1:]
		if len(dials) == 0 {
			cancel() // the last session ends with ctx
		}
		return err
	}
	session := func(ctx context.Context) error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return errors.New("dropped")
	}
	wait := func(attempt int) time.Duration {
		st := c.Status()
		waited = append(waited, attempt)
		states = append(states, fmt.Sprintf("%s/%d/%s", st.State, st.Attempt, st.Error))
		return 0
	}
	c.Keep(ctx, wait, dial, session)
	if got := fmt.Sprint(waited); got != "[1 2 1]" {
		t.Errorf("attempts waited for = %s, want [1 2 1] (the drop after a dial that worked counts from 1)", got)
	}
	if got := fmt.Sprint(states); got != "[reconnecting/1/refused reconnecting/2/refused reconnecting/1/dropped]" {
		t.Errorf("states while waiting = %s", got)
	}
	if st := c.Status(); st.State != StateStopped {
		t.Errorf("after ctx ended, state = %s, want %s", st.State, StateStopped)
	}
}
