package agent

import (
	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/daemon/agent/cycle"
	"github.com/agentd/agentd/daemon/store"
)

// eventOf is the event a follower sees for an effect: the decision recorded, the result
// remembered, the agent's new state, its run's end. The other effects show in these.
var eventOf = map[cycle.EffectKind]api.EventType{
	cycle.RecordDecision: api.EventDecision,
	cycle.RecordEpisode:  api.EventResult,
	cycle.SetAgent:       api.EventState,
	cycle.EndRun:         api.EventFinish,
}

// publishOrder is the order a follower reads a transition's events in.
var publishOrder = []api.EventType{api.EventDecision, api.EventResult, api.EventState, api.EventFinish}

// publish has the events of the transition's effects published once tx commits (never
// when it rolls back), when the change has a publisher. The agent is shown as the caller
// last wrote it: c.shown when set, else c.a with its open proposal.
func (c *change) publish(tx *store.Tx, out applied) {
	if c.pub == nil {
		return
	}
	listed := map[api.EventType]bool{}
	for _, e := range out.effects {
		if t, ok := eventOf[e.Kind]; ok {
			listed[t] = true
		}
	}
	if len(listed) == 0 {
		return
	}
	tx.AfterCommit(func() {
		for _, t := range publishOrder {
			if listed[t] {
				c.pub(c.event(t, out))
			}
		}
	})
}

// event is the event of type t the change publishes.
func (c *change) event(t api.EventType, out applied) api.Event {
	ev := api.Event{Type: t, AgentID: agentID(c.a, c.p)}
	switch t {
	case api.EventDecision:
		ev.Decision = c.decision
		return ev
	case api.EventResult:
		ev.Episode = out.episode
		return ev
	}
	ev.Agent = c.shown
	if ev.Agent == nil {
		ev.Agent = viewOf(c.a, c.p, nil)
	}
	switch {
	case t == api.EventFinish && c.finishMessage != nil:
		ev.Message = *c.finishMessage
	case t == api.EventFinish, c.exhausted != nil && c.exhausted.Scope == api.BudgetScopeAgent:
		ev.Message = ev.Agent.StateReason
	}
	if c.exhausted != nil {
		ev.Exhausted = &c.exhausted.BudgetExhausted
	}
	return ev
}
