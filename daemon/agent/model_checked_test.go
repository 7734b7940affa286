package agent

import (
	"errors"
	"testing"
	"time"

	"github.com/agentd/agentd/daemon/llm"
)

// Status reports when the server was last heard from, so a cached "reachable" shows its age.
func TestModelStatusCarriesCheckedAt(t *testing.T) {
	m := &modelState{model: "m"}
	if st := m.status(); !st.CheckedAt.IsZero() {
		t.Fatalf("checked_at %v before any probe, want zero", st.CheckedAt)
	}
	before := time.Now()
	m.probedOK("m", &llm.ModelInfo{Model: "m"})
	if st := m.status(); !st.Reachable || st.CheckedAt.Before(before) {
		t.Errorf("after a good probe: reachable %v, checked_at %v, want reachable and at or after %v", st.Reachable, st.CheckedAt, before)
	}
	before = time.Now()
	m.failed(errors.Join(llm.ErrUnavailable, errors.New("connection refused")))
	if st := m.status(); st.Reachable || st.CheckedAt.Before(before) {
		t.Errorf("after a failed probe: reachable %v, checked_at %v, want unreachable and at or after %v", st.Reachable, st.CheckedAt, before)
	}
}
