package agent

import (
	"testing"
	"time"

	"github.com/agentd/agentd/api"
)

// A proposal the policy leaves to a person is followed by the agent's state as it is
// then: waiting, with the proposal pending. A front end that follows the events (agentctl
// run, follow) asks the person on it; an event showing the agent as it was before would
// keep it spinning on "thinking".
func TestProposalLeftToAPersonShowsTheAgentWaiting(t *testing.T) {
	h := newHarness(t)
	events, cancel, err := h.sup.agentViews.Subscribe("", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()
	h.fake.Script(reply("write_file", map[string]string{"path": "a.txt", "contents": "a\n"}))
	a := h.create(api.CreateAgentRequest{})
	deadline := time.After(30 * time.Second)
	for {
		select {
		case e := <-events:
			if e.AgentID != a.ID || e.Agent == nil || e.Type == api.EventProposal {
				continue
			}
			if e.Agent.Pending != nil {
				if e.Agent.State != api.StateAwaitingDecision {
					t.Fatalf("%s event with the proposal pending shows the agent %s; want awaiting_decision", e.Type, e.Agent.State)
				}
				return
			}
		case <-deadline:
			t.Fatal("no event showed the agent with its proposal pending")
		}
	}
}
