package bots

import (
	"context"

	"github.com/agentd/agentd/daemon/client"
)

// Helper agents (start_agent) have no thread of their own: their events go to the thread
// of the nearest parent that has one, labelled with the helper's name, and decisions on
// them come from there. The relay learns each agent's parent from its state events, or
// asks the daemon once for an agent it has not seen.

// maxHelperHops bounds the walk up the parent links.
const maxHelperHops = 8

// agentInfo is what the relay knows of an agent that has no binding.
type agentInfo struct {
	name, parent string
}

// learn notes the parent of the agent an event is about, asking the daemon when the
// event does not say and the relay has not seen the agent before.
func (r *Relay) learn(ctx context.Context, ev client.Event) {
	if ev.Agent != nil {
		r.mu.Lock()
		r.agents[ev.AgentID] = agentInfo{name: ev.Agent.Name, parent: ev.Agent.ParentID}
		r.mu.Unlock()
		return
	}
	if ev.AgentID == "" || ev.Type == client.EventRemoved {
		return
	}
	r.mu.Lock()
	_, known := r.agents[ev.AgentID]
	_, bound := r.bound[ev.AgentID]
	r.mu.Unlock()
	if known || bound {
		return
	}
	a, err := r.opt.Service.Agent(ctx, ev.AgentID)
	if err != nil {
		return
	}
	r.mu.Lock()
	r.agents[a.ID] = agentInfo{name: a.Name, parent: a.ParentID}
	r.mu.Unlock()
}

// boundAncestor returns the nearest agent, agentID itself or a parent, that has a
// binding, and the label its events carry there ("" for agentID's own). Caller holds r.mu.
func (r *Relay) boundAncestor(agentID string) (string, string) {
	id := agentID
	for range maxHelperHops {
		if _, ok := r.bound[id]; ok {
			if id == agentID {
				return id, ""
			}
			return id, r.agents[agentID].name
		}
		info, ok := r.agents[id]
		if !ok || info.parent == "" {
			return agentID, ""
		}
		id = info.parent
	}
	return agentID, ""
}

// waitingHelper returns the helper of agent (at any depth) that waits for a person —
// a proposal to decide or a question to answer — so a reply in the parent's thread
// reaches it; nil when none does.
func (r *Relay) waitingHelper(ctx context.Context, agentID string) *client.Agent {
	all, err := r.opt.Service.Agents(ctx)
	if err != nil {
		return nil
	}
	parent := map[string]string{}
	for _, a := range all {
		parent[a.ID] = a.ParentID
	}
	for i := range all {
		a := &all[i]
		if a.Pending == nil && a.Question == nil {
			continue
		}
		for id, hops := a.ParentID, 0; id != "" && hops < maxHelperHops; id, hops = parent[id], hops+1 {
			if id == agentID {
				return a
			}
		}
	}
	return nil
}

// resyncHelpers posts what helpers of bound agents wait for but was never posted.
func (r *Relay) resyncHelpers(ctx context.Context) {
	all, err := r.opt.Service.Agents(ctx)
	if err != nil {
		return
	}
	r.mu.Lock()
	for _, a := range all {
		if a.ParentID != "" {
			r.agents[a.ID] = agentInfo{name: a.Name, parent: a.ParentID}
		}
	}
	r.mu.Unlock()
	for i := range all {
		a := &all[i]
		if a.ParentID == "" {
			continue
		}
		if a.Pending != nil {
			r.postProposal(ctx, a.Pending)
		}
		if a.Question != nil {
			r.postQuestion(ctx, a.ID, a.Question)
		}
	}
}

// labelled prefixes msg with the helper's name when label is set.
func labelled(msg Message, label string) Message {
	if label == "" {
		return msg
	}
	msg.Summary = "[" + label + "] " + msg.Summary
	msg.Parts = append([]Part{{Spans: []Span{{Text: "🤖 " + label, Bold: true}}}}, msg.Parts...)
	return msg
}
