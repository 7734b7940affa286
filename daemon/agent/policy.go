package agent

import (
	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/commands/permission"
	"github.com/agentd/agentd/daemon/agent/cycle"
	"github.com/agentd/agentd/daemon/agent/policy"
	"github.com/agentd/agentd/daemon/store"
)

// authorize is policy.Authorize under the settings generation l.
func authorize(l *live, tx *store.Tx, a *store.Agent, p, prev *api.Proposal, spec *commands.Spec, d *api.Decision) (cycle.Authorization, *store.Agent, error) {
	return policy.Authorize(l.policy, tx, a, p, prev, spec, d)
}

// parseRules reads set's permission patterns into the policy's settings.
func parseRules(set Settings) (policy.Settings, error) {
	agents := map[string]policy.Patterns{}
	for name, o := range set.Agents {
		agents[name] = policy.Patterns{Allow: o.Allow, Deny: o.Deny}
	}
	g, byAgent, err := policy.ParseRules(policy.Patterns{Allow: set.Allow, Deny: set.Deny}, agents)
	return policy.Settings{Global: g, Agents: byAgent, AutoRead: set.AutoRead, ContinuousLimit: set.ContinuousLimit}, err
}

// sandboxProfile is how far the programs of a's sandboxed command reach: bounded when
// the policy approved it unasked (decided, its approval, says how), and never to a path
// a's deny rules keep from the file commands.
func sandboxProfile(l *live, tx *store.Tx, a *store.Agent, decided *api.Decision) (commands.Profile, error) {
	var prof commands.Profile
	layers, err := policy.Layers(l.policy, tx, a)
	if err != nil {
		return prof, err
	}
	if d := permission.Denied(layers...); d != nil {
		prof.Paths = d
	}
	if decided != nil && decided.Profile != "" {
		prof.Bounded = true
		prof.Write = decided.Profile == api.ProfileBoundedWrite
	}
	return prof, nil
}

// deniedRules are the write-deny rules of agent a, as its sandboxed programs are held to
// them (sandboxProfile); nil when none.
func deniedRules(l *live, tx *store.Tx, a *store.Agent) (commands.PathRules, error) {
	prof, err := sandboxProfile(l, tx, a, nil)
	return prof.Paths, err
}
