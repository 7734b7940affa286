package bots

import (
	"context"
	"strings"

	"github.com/agentd/agentd/api"
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
func (r *Relay) learn(ctx context.Context, ev api.Event) {
	if ev.Agent != nil {
		r.state.learnAgent(ev.AgentID, agentInfo{name: ev.Agent.Name, parent: ev.Agent.ParentID})
		r.learnRole(ctx, ev.AgentID, ev.Agent.Name)
		return
	}
	if ev.AgentID == "" || ev.Type == api.EventRemoved {
		return
	}
	if r.state.knows(ev.AgentID) {
		return
	}
	a, err := r.opt.Service.Agent(ctx, ev.AgentID)
	if err != nil {
		return
	}
	r.state.learnAgent(a.ID, agentInfo{name: a.Name, parent: a.ParentID})
	r.learnRole(ctx, a.ID, a.Name)
}

// waitingID is the proposal a's person is waiting on: its question's or its pending one's.
func waitingID(a *api.Agent) string {
	if a.Question != nil {
		return a.Question.ProposalID
	}
	if a.Pending != nil {
		return a.Pending.ID
	}
	return ""
}

// helpersOf returns the helpers of agent (at any depth), as the daemon lists them now.
func (r *Relay) helpersOf(ctx context.Context, agentID string) []*api.Agent {
	all, err := r.opt.Service.Agents(ctx)
	if err != nil {
		r.log.Error("bots: listing agents for a reply", "err", err)
		return nil
	}
	parent := map[string]string{}
	for _, a := range all {
		parent[a.ID] = a.ParentID
	}
	var out []*api.Agent
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
// those waiting for a person and shown before the reply was written (shownBefore) — the
// one at the bottom of the thread as the person saw it; a itself when none waits. named
// reports that the reply named its agent.
func (r *Relay) replyTarget(ctx context.Context, a *api.Agent, text string, shownBefore func(*api.Agent) bool) (target *api.Agent, rest string, named bool) {
	if waitingID(a) != "" && !r.state.knowsHelpersOf(a.ID) {
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
	// Among those shown before the reply, else (the reply is refused for what waits
	// then) among all.
	if t, ok := r.bottomWaiting(a, helpers, shownBefore); ok {
		return t, text, false
	}
	t, _ := r.bottomWaiting(a, helpers, nil)
	return t, text, false
}

// bottomWaiting is the one of a and its helpers, among those shown (nil: all), whose
// proposal or question was posted last; a, and false, when none of them waits.
func (r *Relay) bottomWaiting(a *api.Agent, helpers []*api.Agent, shown func(*api.Agent) bool) (*api.Agent, bool) {
	target, found := a, false
	var best int64 = -1
	if id := waitingID(a); id != "" && (shown == nil || shown(a)) {
		best, found = r.state.postOrder(id), true
	}
	for _, h := range helpers {
		id := waitingID(h)
		if id == "" || shown != nil && !shown(h) {
			continue
		}
		// One never seen posted (the relay restarted) counts as older than any seen.
		if n := r.state.postOrder(id); !found || n > best {
			target, best, found = h, n, true
		}
	}
	return target, found
}

// resyncHelpers posts what helpers of bound agents wait for but was never posted.
func (r *Relay) resyncHelpers(ctx context.Context) {
	all, err := r.opt.Service.Agents(ctx)
	if err != nil {
		return
	}
	for _, a := range all {
		if a.ParentID != "" {
			r.state.learnAgent(a.ID, agentInfo{name: a.Name, parent: a.ParentID})
		}
	}
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
