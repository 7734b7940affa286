package bots

import (
	"context"
	"strings"

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
		r.learnRole(ctx, ev.AgentID, ev.Agent.Name)
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
	r.learnRole(ctx, a.ID, a.Name)
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

// markPosted notes that the proposal (or its question) id was posted now: a reply in
// the thread goes to the one posted last among those waiting.
func (r *Relay) markPosted(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.posted[id]; !ok {
		r.postSeq++
		r.posted[id] = r.postSeq
	}
}

// waitingID is the proposal a's person is waiting on: its question's or its pending one's.
func waitingID(a *client.Agent) string {
	if a.Question != nil {
		return a.Question.ProposalID
	}
	if a.Pending != nil {
		return a.Pending.ID
	}
	return ""
}

// helpersOf returns the helpers of agent (at any depth), as the daemon lists them now.
func (r *Relay) helpersOf(ctx context.Context, agentID string) []*client.Agent {
	all, err := r.opt.Service.Agents(ctx)
	if err != nil {
		r.log.Error("bots: listing agents for a reply", "err", err)
		return nil
	}
	parent := map[string]string{}
	for _, a := range all {
		parent[a.ID] = a.ParentID
	}
	var out []*client.Agent
	for i := range all {
		a := &all[i]
		for id, hops := a.ParentID, 0; id != "" && hops < maxHelperHops; id, hops = parent[id], hops+1 {
			if id == agentID {
				out = append(out, a)
				break
			}
		}
	}
	return out
}

// replyTarget picks the agent a reply in a's thread is for, and the reply's text for it.
// "NAME: text", where NAME is a helper's key or full name, is for that helper. Otherwise
// it is for the one, a or a helper, whose proposal or question was posted last among
// those waiting for a person — the one at the bottom of the thread; a itself when none
// waits. named reports that the reply named its agent.
func (r *Relay) replyTarget(ctx context.Context, a *client.Agent, text string) (target *client.Agent, rest string, named bool) {
	if waitingID(a) != "" && !r.knowsHelpersOf(a.ID) {
		return a, text, false // nothing else can wait in this thread
	}
	helpers := r.helpersOf(ctx, a.ID)
	if name, after, ok := strings.Cut(text, ":"); ok {
		name = strings.TrimSpace(name)
		for _, h := range helpers {
			if name != "" && (name == h.Name || name == h.Name[strings.LastIndexByte(h.Name, '/')+1:]) {
				return h, strings.TrimSpace(after), true
			}
		}
	}
	target = a
	var best int64 = -1
	if id := waitingID(a); id != "" {
		best = r.postOrder(id)
	}
	for _, h := range helpers {
		id := waitingID(h)
		if id == "" {
			continue
		}
		// One never seen posted (the relay restarted) counts as older than any seen.
		if n := r.postOrder(id); waitingID(target) == "" || n > best {
			target, best = h, n
		}
	}
	return target, text, false
}

// postOrder is the order in which proposal id was posted; 0 when not seen.
func (r *Relay) postOrder(id string) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.posted[id]
}

// knowsHelpersOf reports whether the relay has seen a helper of agentID (at any depth).
func (r *Relay) knowsHelpersOf(agentID string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for id := range r.agents {
		cur := id
		for range maxHelperHops {
			info, ok := r.agents[cur]
			if !ok || info.parent == "" {
				break
			}
			if info.parent == agentID {
				return true
			}
			cur = info.parent
		}
	}
	return false
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
