package bots

import (
	"context"
	"slices"

	"github.com/agentd/agentd/api"
)

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
		case ref.AgentID == b.AgentID || c.isHelperOf(ctx, ref.AgentID, b.AgentID):
			return ref.AgentID, "", false
		}
		return "", elsewhere, true
	}
	roles, ok := c.teamAgents(ctx, platform, w)
	switch {
	case !ok:
		return "", "This proposal's agent is gone.", ref.AgentID != ""
	case ref.AgentID == "":
		if !c.threadsProposal(ctx, roles, ref.ProposalID) {
			return "", elsewhere, true
		}
		return c.r.teams.teamAgentFor(ctx, platform, w, ref.ProposalID), "", false
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
	case !c.r.threads.knowsHelpersOf(bound):
		return bound, false
	}
	for _, h := range c.helpersOf(ctx, bound) {
		if waitingID(h) == proposalID {
			return h.ID, true
		}
	}
	return bound, false
}

// isHelperOf reports whether agent id is a helper of parent, at any depth.
func (c *check) isHelperOf(ctx context.Context, id, parent string) bool {
	for range maxHelperHops {
		a, err := c.r.opt.Service.Agent(ctx, id)
		if err != nil || a.ParentID == "" {
			return false
		}
		if a.ParentID == parent {
			return true
		}
		id = a.ParentID
	}
	return false
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

// teamAgents returns the role agents of the team run bound to w's thread; ok is false
// when the thread is bound to no team run.
func (c *check) teamAgents(ctx context.Context, platform string, w Where) (ids []string, ok bool) {
	tb, isTeams := c.r.opt.Bindings.(teamBindings)
	teams := c.r.teams.teamService()
	if !isTeams || teams == nil {
		return nil, false
	}
	b, err := tb.TeamBindingByThread(ctx, platform, w.Channel, w.Thread)
	if err != nil || b == nil {
		return nil, false
	}
	run, err := teams.Team(ctx, b.TeamRunID)
	if err != nil {
		return nil, true
	}
	for _, id := range run.Agents {
		ids = append(ids, id)
	}
	return ids, true
}
