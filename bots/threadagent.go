package bots

import (
	"context"
	"maps"
	"slices"
	"strings"

	"github.com/agentd/agentd/api"
)

// Helper agents (start_agent) have no thread of their own: their events go to the thread
// of the nearest parent that has one, labelled with the helper's name, and decisions on
// them come from there. The relay learns each agent's parent from its state events, or
// asks the daemon once for an agent it has not seen.

// maxHelperHops bounds the walk up the parent links.
const maxHelperHops = 8

// Which agent a click or dialog in a thread decides for: the thread's own agent, a helper
// of it, or a role agent of the thread's team run, read from the daemon and the store
// (the threadAgent guard).

// clickAgent is the agent a click or feedback dialog in w decides for: the thread's
// agent, a helper of it, or a role agent of the thread's team run — never simply the one
// the button names. A button naming any other agent is refused (note) and, when audit
// is set, audited.
func (c *check) clickAgent(ctx context.Context, platform string, w Where, ref Ref) (agentID, note string, audit bool) {
	const elsewhere = "This button is not for this thread's agent, so it decided nothing. Decide on the proposal in its own thread."
	if w.Thread == "" {
		return "", "This button is in no agent's thread, so it decided nothing.", ref.AgentID != ""
	}
	b, err := c.r.opt.Bindings.BindingByThread(ctx, platform, w.Channel, w.Thread)
	if err != nil {
		c.r.log.Error("bots: reading chat binding", "err", err)
		return "", "Could not read this thread's agent, so the click decided nothing; try again.", false
	}
	if b != nil {
		switch {
		case ref.AgentID == "":
			id, waits := c.waiterIn(ctx, b.AgentID, ref.ProposalID)
			if !waits && !c.threadsProposal(ctx, append([]string{b.AgentID}, agentIDs(c.helpersOf(ctx, b.AgentID))...), ref.ProposalID) {
				return "", elsewhere, true
			}
			return id, "", false
		case ref.AgentID == b.AgentID || slices.Contains(agentIDs(c.helpersOf(ctx, b.AgentID)), ref.AgentID):
			return ref.AgentID, "", false
		}
		return "", elsewhere, true
	}
	run, ok := c.teamRunOf(ctx, platform, w)
	roles := slices.Collect(maps.Values(run.Agents))
	switch {
	case !ok:
		return "", "This proposal's agent is gone.", ref.AgentID != ""
	case ref.AgentID == "":
		if !c.threadsProposal(ctx, roles, ref.ProposalID) {
			return "", elsewhere, true
		}
		for _, id := range roles {
			if a, err := c.r.opt.Service.Agent(ctx, id); err == nil && waitingID(a) == ref.ProposalID {
				return a.ID, "", false
			}
		}
		return run.Waiting, "", false
	case slices.Contains(roles, ref.AgentID):
		return ref.AgentID, "", false
	}
	return "", elsewhere, true
}

// waiterIn is the agent of bound's thread (bound or one of its helpers) that waits on
// proposalID, for buttons that name the proposal alone, and true; bound and false when
// none does.
func (c *check) waiterIn(ctx context.Context, bound, proposalID string) (string, bool) {
	a, err := c.r.opt.Service.Agent(ctx, bound)
	switch {
	case err != nil:
		return bound, false
	case waitingID(a) == proposalID:
		return bound, true
	}
	for _, h := range c.helpersOf(ctx, bound) {
		if waitingID(h) == proposalID {
			return h.ID, true
		}
	}
	return bound, false
}

// threadsProposal reports whether proposal id was made by one of agents (a thread's),
// for a button that names the proposal alone: one naming another thread's proposal is
// refused and audited like one naming another agent.
func (c *check) threadsProposal(ctx context.Context, agents []string, id string) bool {
	for _, a := range agents {
		if findProposal(ctx, c.r.opt.Service, a, id) != nil {
			return true
		}
	}
	return false
}

func agentIDs(as []*api.Agent) []string {
	ids := make([]string, len(as))
	for i, a := range as {
		ids[i] = a.ID
	}
	return ids
}

// teamRunOf returns the team run bound to w's thread (one with no agents when it cannot
// be read); ok is false when the thread is bound to no team run.
func (c *check) teamRunOf(ctx context.Context, platform string, w Where) (*api.TeamRun, bool) {
	teams := c.r.teams.engine
	if teams == nil {
		return &api.TeamRun{}, false
	}
	b, err := c.r.opt.Bindings.TeamBindingByThread(ctx, platform, w.Channel, w.Thread)
	if err != nil || b == nil {
		return &api.TeamRun{}, false
	}
	if run, err := teams.Team(ctx, b.TeamRunID); err == nil {
		return run, true
	}
	return &api.TeamRun{}, true
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
func (c *check) helpersOf(ctx context.Context, agentID string) []*api.Agent {
	all, err := c.r.opt.Service.Agents(ctx)
	if err != nil {
		c.r.log.Error("bots: listing agents for a reply", "err", err)
		return nil
	}
	return slices.DeleteFunc(under(all, map[string]bool{agentID: true}), func(a *api.Agent) bool { return a.ID == agentID })
}

// under lists the agents of all that are in roots or helpers of one of them, at any depth.
func under(all []api.Agent, roots map[string]bool) []*api.Agent {
	parent := map[string]string{}
	for _, a := range all {
		parent[a.ID] = a.ParentID
	}
	var out []*api.Agent
	for i := range all {
		for id, hops := all[i].ID, 0; id != "" && hops <= maxHelperHops; id, hops = parent[id], hops+1 {
			if roots[id] {
				out = append(out, &all[i])
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
func (c *check) replyTarget(ctx context.Context, a *api.Agent, text string, shownBefore func(*api.Agent) bool) (target *api.Agent, rest string, named bool) {
	helpers := c.helpersOf(ctx, a.ID)
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
	all := append([]*api.Agent{a}, helpers...)
	for _, shown := range []func(*api.Agent) bool{shownBefore, nil} {
		if t := c.bottomWaiting(ctx, all, shown); t != nil {
			return t, text, false
		}
	}
	return a, text, false
}

// bottomWaiting is the one of agents, among those shown (nil: all), whose proposal or
// question waiting is at the bottom of the thread: its message is the newest in the
// platform's own order. One whose post is in flight is newer than any posted, one never
// posted (the relay restarted before posting it) older; of two alike the first wins.
// nil when none waits.
func (c *check) bottomWaiting(ctx context.Context, agents []*api.Agent, shown func(*api.Agent) bool) *api.Agent {
	var bottom *api.Agent
	bottomMsg, rank := "", -1
	for _, a := range agents {
		id, kind := waitingMessage(a)
		if id == "" || shown != nil && !shown(a) {
			continue
		}
		msg, _ := c.shownMessage(ctx, id, kind)
		r := 1 // posted
		if msg == "" {
			r = 0 // never posted
			if c.r.board.posting(id) {
				r = 2 // in flight
			}
		}
		if r > rank || r == 1 && rank == 1 && c.ep.a.Before(bottomMsg, msg) {
			bottom, bottomMsg, rank = a, msg, r
		}
	}
	return bottom
}

// findProposal reads one proposal of an agent from the daemon.
func findProposal(ctx context.Context, svc Service, agentID, id string) *api.Proposal {
	ps, err := svc.Proposals(ctx, agentID)
	if err != nil {
		return nil
	}
	for i := len(ps) - 1; i >= 0; i-- {
		if ps[i].ID == id {
			return &ps[i]
		}
	}
	return nil
}
