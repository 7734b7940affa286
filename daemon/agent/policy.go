package agent

import (
	"errors"
	"fmt"

	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/commands/permission"
	"github.com/agentd/agentd/daemon/client"
	"github.com/agentd/agentd/daemon/store"
)

// rules are the parsed permission patterns from config: global, and per agent name.
type rules struct {
	global permission.Rules
	agents map[string]permission.Rules
}

func parseRules(opt Settings) (rules, error) {
	var r rules
	var errs []error
	var err error
	if r.global, err = permission.ParseRules("config", opt.Allow, opt.Deny); err != nil {
		errs = append(errs, fmt.Errorf("permissions: %w", err))
	}
	r.agents = map[string]permission.Rules{}
	for name, o := range opt.Agents {
		if r.agents[name], err = permission.ParseRules("agent-config", o.Allow, o.Deny); err != nil {
			errs = append(errs, fmt.Errorf("agents.%s: %w", name, err))
		}
	}
	return r, errors.Join(errs...)
}

// storedRules turns an agent's stored patterns into a rules layer; a pattern that no
// longer parses is skipped (it was checked when stored).
func storedRules(perms []client.Permission) permission.Rules {
	r := permission.Rules{Layer: "stored"}
	for _, p := range perms {
		pat, err := permission.Parse(p.Pattern)
		if err != nil {
			continue
		}
		if p.Effect == "deny" {
			r.Deny = append(r.Deny, pat)
		} else {
			r.Allow = append(r.Allow, pat)
		}
	}
	return r
}

// verdict is what the patterns of settings l say about running p now, for agent a, in tx.
func (s *Supervisor) verdict(l *live, tx *store.Tx, a *store.Agent, spec *commands.Spec, p *client.Proposal) (permission.Verdict, error) {
	if spec == nil {
		return permission.Verdict{Effect: permission.Ask, Reason: "the command is not available now"}, nil
	}
	layers, err := layersFor(l, tx, a)
	if err != nil {
		return permission.Verdict{}, err
	}
	return permission.Evaluate(*spec, p.Args, policyOptions(l, a), layers...), nil
}

// policyOptions are the evaluation options for agent a under settings l: its file
// commands' paths are matched as written and as resolved through its workspace's links.
func policyOptions(l *live, a *store.Agent) permission.Options {
	ws := a.Workspace
	return permission.Options{AutoRead: l.AutoRead, Resolve: func(p string) (string, error) {
		return commands.ResolveLinks(ws, p)
	}}
}

// layersFor returns the rule layers that decide agent a's proposals, in order: its stored
// patterns and config table, then its parents' (a helper follows its parents' policy too,
// nearest parent first; a deny anywhere wins, as everywhere), then the global patterns.
func layersFor(l *live, tx *store.Tx, a *store.Agent) ([]permission.Rules, error) {
	perms, err := tx.Permissions(a.ID)
	if err != nil {
		return nil, err
	}
	layers := []permission.Rules{storedRules(perms), l.rules.agents[a.Name]}
	for pid, hops := a.ParentID, 0; pid != "" && hops < maxAncestors; hops++ {
		parent, err := tx.Agent(pid)
		if errors.Is(err, store.ErrNotFound) {
			break
		} else if err != nil {
			return nil, err
		}
		if perms, err = tx.Permissions(parent.ID); err != nil {
			return nil, err
		}
		layers = append(layers, storedRules(perms), l.rules.agents[parent.Name])
		pid = parent.ParentID
	}
	return append(layers, l.rules.global), nil
}

// policyDecision turns a pattern's verdict into the policy's decision: an allow approves,
// a deny becomes feedback to the model (not run; the agent goes on with another command).
func policyDecision(p *client.Proposal, v permission.Verdict) *client.Decision {
	switch v.Effect {
	case permission.Allow:
		by := "allow pattern " + v.Pattern
		if v.Pattern == "" {
			by = "auto_read"
		}
		return &client.Decision{ProposalID: p.ID, Kind: client.DecisionApprove, Count: 1, Source: "policy", By: by, Pattern: v.Pattern}
	case permission.Deny:
		return &client.Decision{ProposalID: p.ID, Kind: client.DecisionFeedback, Source: "policy", By: "deny pattern " + v.Pattern, Pattern: v.Pattern,
			Feedback: fmt.Sprintf("Not run: %s is refused here by the permission pattern %s. Do not propose it again; choose another way.", p.Command, v.Pattern)}
	}
	return nil
}

// scopePattern is the pattern a widening decision stores: the proposal's exact command
// and subject.
func scopePattern(scope string, spec *commands.Spec, p *client.Proposal) (string, error) {
	if spec == nil {
		return "", fmt.Errorf("%s is not available to this agent now: decide on this proposal only", p.Command)
	}
	var pat permission.Pattern
	var err error
	if scope == client.ScopeDeny {
		pat, err = permission.DenyPattern(*spec, p.Args)
	} else {
		pat, err = permission.AlwaysPattern(*spec, p.Args)
	}
	if err != nil {
		return "", fmt.Errorf("no pattern can be stored for this proposal (%v): decide on it alone", err)
	}
	return pat.String(), nil
}
