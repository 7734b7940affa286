package agent

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agentd/agentd/api"
)

// TestADecisionKeepsWhoMadeIt: the decision event and its audit entry carry the
// decider's display name and, for a local user, the uid the socket reported.
func TestADecisionKeepsWhoMadeIt(t *testing.T) {
	h := newHarness(t)
	h.fake.Script(
		reply("write_file", map[string]string{"path": "a.txt", "contents": "one"}),
		reply("write_file", map[string]string{"path": "b.txt", "contents": "two"}),
	)
	a := h.create(api.CreateAgentRequest{})
	p := h.pending(a.ID)
	uid := uint32(1000)
	d, err := h.sup.decisions.Decide(context.Background(), a.ID, api.DecideRequest{
		ProposalID: p.ID, Kind: api.DecisionApprove, Count: 1, By: "U04ABC", ByName: "Ana Lima", UID: &uid, Source: "slack"})
	if err != nil {
		t.Fatal(err)
	}
	if d.ByName != "Ana Lima" || d.UID == nil || *d.UID != uid {
		t.Errorf("decision %+v lost the name or the uid", d)
	}
	list, err := h.sup.auditLog.Audit(context.Background(), api.AuditQuery{Agent: a.ID})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range list {
		if e.Kind != "decision" {
			continue
		}
		var got api.Decision
		if err := json.Unmarshal(e.Detail, &got); err != nil {
			t.Fatal(err)
		}
		if got.By != "U04ABC" || got.ByName != "Ana Lima" || got.UID == nil || *got.UID != uid {
			t.Errorf("audit entry %s, want by U04ABC, by_name Ana Lima, uid %d", e.Detail, uid)
		}
		return
	}
	t.Fatalf("no decision in the audit log: %+v", list)
}

// TestAStepsResultIsNoFinish: after a command succeeds the agent thinks on with no state
// reason; only the run's end reads "finished: …" (follow once showed "state: thinking:
// finished: (empty folder)" after every step).
func TestAStepsResultIsNoFinish(t *testing.T) {
	h := newHarness(t)
	h.fake.Script(
		reply("write_file", map[string]string{"path": "a.txt", "contents": "one"}),
		reply("write_file", map[string]string{"path": "b.txt", "contents": "two"}),
	)
	a := h.create(api.CreateAgentRequest{})
	p := h.pending(a.ID)
	if _, err := h.decide(a.ID, p, "y"); err != nil {
		t.Fatal(err)
	}
	next := h.waitFor(a.ID, "the next proposal", func(v *api.Agent) bool { return v.Pending != nil && v.Pending.ID != p.ID })
	if next.StateReason != "" {
		t.Errorf("after a step the agent is %s with reason %q, want none", next.State, next.StateReason)
	}
}
