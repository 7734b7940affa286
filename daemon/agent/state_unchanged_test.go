package agent

import (
	"context"
	"testing"
	"time"

	"github.com/agentd/agentd/api"
)

// A state event says whether it shows the agent's state as it was: a new agent shown
// idle is no change, a task given to it is one, though the mutation moved the agent
// before the event's own change was applied.
func TestStateEventSaysWhenTheStateIsUnchanged(t *testing.T) {
	h := newHarness(t)
	listForever(h)
	events, cancel, err := h.sup.agentViews.Subscribe("", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()
	no := false
	a := h.create(api.CreateAgentRequest{Name: "tester", Description: "a test agent", Start: &no})
	next := func(what string) api.Event {
		t.Helper()
		timeout := time.After(30 * time.Second)
		for {
			select {
			case e := <-events:
				if e.AgentID == a.ID && e.Type == api.EventState {
					return e
				}
			case <-timeout:
				t.Fatalf("no state event for %s", what)
			}
		}
	}
	if e := next("the creation"); e.Agent.State != api.StateIdle || !e.Unchanged {
		t.Errorf("creation shows %s, unchanged %v; want idle, unchanged", e.Agent.State, e.Unchanged)
	}
	if _, err := h.sup.runs.Task(context.Background(), a.ID, "look around"); err != nil {
		t.Fatal(err)
	}
	if e := next("the task"); e.Agent.State == api.StateIdle || e.Unchanged {
		t.Errorf("task shows %s, unchanged %v; want a new state, changed", e.Agent.State, e.Unchanged)
	}
}
