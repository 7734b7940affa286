package bots

import (
	"errors"
	"testing"
)

// TestConnectionSetKeepsSinceWhileTheStateHolds: Set returns the state before, moves
// Since only when the state changes, and clears the error once the connection is up.
func TestConnectionSetKeepsSinceWhileTheStateHolds(t *testing.T) {
	c := NewConnection("slack")
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
}
