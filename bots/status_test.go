package bots

import (
	"errors"
	"fmt"
	"testing"
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
