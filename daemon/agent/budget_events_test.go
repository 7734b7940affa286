package agent

import (
	"context"
	"testing"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/daemon/run"
)

// exhaustedEvent reads events until the agent's event of type typ that says a budget
// stopped it, and returns it; any other event of that type for the agent first fails.
func exhaustedEvent(t *testing.T, events <-chan api.Event, agentID string, typ api.EventType, state api.AgentState) api.Event {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case e := <-events:
			if e.AgentID != agentID || e.Type != typ || e.Agent == nil || e.Agent.State != state {
				continue
			}
			if e.Exhausted == nil {
				t.Fatalf("%s event for %s without budget_exhausted: %+v", typ, state, e)
			}
			return e
		case <-timeout:
			t.Fatalf("no %s event for %s", typ, state)
			return api.Event{}
		}
	}
}

// TestAgentBudgetPauseEvent: the state event of an agent its own budget paused says
// which budget and its bound, so a front end can show "paused: over its token budget".
func TestAgentBudgetPauseEvent(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.AgentBudget = run.Budget{MaxTokens: 1, MaxWall: time.Hour} })
	listForever(h)
	events, cancel, err := h.sup.agentViews.Subscribe("", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()
	a := autoAgent(h, 10)
	e := exhaustedEvent(t, events, a.ID, api.EventState, api.StatePaused)
	want := api.BudgetExhausted{Scope: api.BudgetScopeAgent, Kind: "tokens", RunID: a.RunID,
		Budget: api.Budget{MaxTokens: 1, MaxTime: "1h0m0s"}}
	if *e.Exhausted != want {
		t.Errorf("budget_exhausted = %+v, want %+v", *e.Exhausted, want)
	}
	if e.Message != e.Agent.StateReason || e.Message == "" {
		t.Errorf("message %q, reason %q: want the reason", e.Message, e.Agent.StateReason)
	}
}

// TestRunBudgetEndEvents: the state and finish events of a run its budget ended name
// the run's budget, not the agent's.
func TestRunBudgetEndEvents(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.AgentBudget = run.Budget{MaxSteps: 100} })
	listForever(h)
	events, cancel, err := h.sup.agentViews.Subscribe("", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()
	a, err := h.sup.runs.CreateAgent(context.Background(), api.CreateAgentRequest{Name: "capped", Description: "d", Task: "look around",
		Policy: &api.Policy{Mode: "auto", AutoSteps: 10}, Budget: &api.Budget{MaxSteps: 2, MaxTime: "1h"}})
	if err != nil {
		t.Fatal(err)
	}
	want := api.BudgetExhausted{Scope: api.BudgetScopeRun, Kind: "steps", RunID: a.RunID,
		Budget: api.Budget{MaxSteps: 2, MaxTime: "1h0m0s"}}
	for _, typ := range []api.EventType{api.EventState, api.EventFinish} {
		e := exhaustedEvent(t, events, a.ID, typ, api.StateIdle)
		if *e.Exhausted != want {
			t.Errorf("%s: budget_exhausted = %+v, want %+v", typ, *e.Exhausted, want)
		}
	}
}
