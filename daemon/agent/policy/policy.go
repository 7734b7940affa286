// Package policy decides how a proposal is authorized: the permission rules of the config,
// of the agent and of its parents, its grants and its top agent's (y -N, y!, patterns, a
// run's auto steps), the files a y! binds, and the mode the family follows. It reads
// and writes only the store transaction it is handed; daemon/agent hands it the
// settings in use (Settings) and records what it answers, through cycle.Authorize.
package policy

import (
	"errors"
	"fmt"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/commands/permission"
	"github.com/agentd/agentd/daemon/agent/cycle"
	"github.com/agentd/agentd/daemon/agent/policy/bind"
	"github.com/agentd/agentd/daemon/store"
)

// MaxAncestors bounds walks up the parent links (a cycle cannot be made, but a walk
// must end anyway).
const MaxAncestors = 16

// Settings are the config's part of every authorization: the parsed permission patterns,
// whether read-class commands run unasked, and how many steps continuous mode takes
// when the agent's policy names no limit.
type Settings struct {
	Global          permission.Rules            // [permissions]
	Agents          map[string]permission.Rules // [agents.NAME], by agent name
	AutoRead        bool
	ContinuousLimit int
}

// Patterns are allow and deny patterns as the config writes them.
type Patterns struct{ Allow, Deny []string }

// ParseRules parses the global patterns and each agent's, naming every one that does not parse.
func ParseRules(global Patterns, agents map[string]Patterns) (g permission.Rules, byAgent map[string]permission.Rules, err error) {
	var errs []error
	if g, err = permission.ParseRules("config", global.Allow, global.Deny); err != nil {
		errs = append(errs, fmt.Errorf("permissions: %w", err))
	}
	byAgent = map[string]permission.Rules{}
	for name, o := range agents {
		if byAgent[name], err = permission.ParseRules("agent-config", o.Allow, o.Deny); err != nil {
			errs = append(errs, fmt.Errorf("agents.%s: %w", name, err))
		}
	}
	return g, byAgent, errors.Join(errs...)
}

// storedRules turns an agent's stored patterns into a rules layer; a pattern that no
// longer parses is skipped (it was checked when stored).
func storedRules(perms []api.Permission) permission.Rules {
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

// Authorize asks cycle.Authorize how agent a's proposal p is decided now, in tx: by its
// rule layers, its grants and its top agent's (read fresh, so a revoke holds at once),
// the files its line names as they are now (when a y! binds them), and the mode it
// follows (its top agent's for a helper: owner), or by d, a person's decision, when
// set. The caller records the answer's grant use or new grant with ApplyGrant. prev is
// the proposal before p in its run (nil for the first), spec p's command as the agent
// has it now (nil when it has none by that name).
func Authorize(l Settings, tx *store.Tx, a *store.Agent, p, prev *api.Proposal, spec *commands.Spec, d *api.Decision) (au cycle.Authorization, owner *store.Agent, err error) {
	req := cycle.Request{Proposal: p, Spec: spec, Repeat: prev != nil && prev.Hash == p.Hash, Options: Options(l, a), Decision: d,
		Approver: true} // the local API's peers may decide; chat front ends refuse non-approvers before
	if !req.Repeat && d == nil && p.Status == api.ProposalPending {
		if req.Repeat, err = Caught(tx, a, p); err != nil { // a loop the watchdog asked about
			return au, nil, err
		}
	}
	if owner, err = Owner(tx, a); err != nil {
		return au, nil, err
	}
	if d == nil && p.Command != commands.AskUser && !req.Repeat && spec != nil {
		if req.Rules, err = Layers(l, tx, a); err != nil {
			return au, nil, err
		}
		if req.Grants, err = grantsFor(tx, a, owner); err != nil {
			return au, nil, err
		}
	}
	if bind.RunsFiles(p.Command) && (approvesAlways(d) || exactGrantOf(req.Grants, p)) {
		req.Bind = bind.Files(a.Workspace, p) // read only when a y! may bind them or be bound by them
	}
	req.Now, req.Run = tx.Now(), owner.RunID
	req.Policy = cycle.Policy{Mode: owner.Policy.Mode, ContinuousLimit: owner.Policy.ContinuousLimit}
	if req.Policy.ContinuousLimit <= 0 {
		req.Policy.ContinuousLimit = l.ContinuousLimit
	}
	if owner != a {
		req.Policy.Owner = owner.Name
	}
	return cycle.Authorize(req), owner, nil
}

// approvesAlways reports whether d is a y!: an approval that grants the exact command.
func approvesAlways(d *api.Decision) bool {
	return d != nil && d.Kind == api.DecisionApprove && d.Scope == api.ScopeAgent
}

// exactGrantOf reports whether an exact grant among gs names p's command and args.
func exactGrantOf(gs []api.Grant, p *api.Proposal) bool {
	for _, g := range gs {
		if g.Kind == api.GrantExact && g.Command == p.Command && g.Hash == p.Hash {
			return true
		}
	}
	return false
}

// grantsFor are the grants that may approve a's proposals: its own, then its top agent's.
func grantsFor(tx *store.Tx, a, owner *store.Agent) ([]api.Grant, error) {
	gs, err := tx.LiveGrants(a.ID, owner.RunID) // a helper's own --run grants end with its top agent's run
	if err != nil || owner == a {
		return gs, err
	}
	more, err := tx.LiveGrants(owner.ID, owner.RunID)
	return append(gs, more...), err
}

// Options are the evaluation options for agent a under settings l: its file
// commands' paths are matched as written and as resolved through its workspace's links.
func Options(l Settings, a *store.Agent) permission.Options {
	ws := a.Workspace
	return permission.Options{AutoRead: l.AutoRead, Resolve: func(p string) (string, error) {
		return commands.ResolveLinks(ws, p)
	}}
}

// Layers returns the rule layers that decide agent a's proposals, in order: its stored
// patterns and config table, then its parents' (a helper follows its parents' policy too,
// nearest parent first; a deny anywhere wins, as everywhere), then the global patterns.
func Layers(l Settings, tx *store.Tx, a *store.Agent) ([]permission.Rules, error) {
	perms, err := tx.Permissions(a.ID)
	if err != nil {
		return nil, err
	}
	layers := []permission.Rules{storedRules(perms), l.Agents[a.Name]}
	for pid, hops := a.ParentID, 0; pid != "" && hops < MaxAncestors; hops++ {
		parent, err := tx.Agent(pid)
		if errors.Is(err, store.ErrNotFound) {
			break
		} else if err != nil {
			return nil, err
		}
		if perms, err = tx.Permissions(parent.ID); err != nil {
			return nil, err
		}
		layers = append(layers, storedRules(perms), l.Agents[parent.Name])
		pid = parent.ParentID
	}
	return append(layers, l.Global), nil
}

// ScopePattern is the pattern of the proposal's exact command and subject: what n!
// stores, and for y! the check that rules could name it at all (a shell line that is
// not plain commands always asks, so y! may not grant it).
func ScopePattern(scope string, spec *commands.Spec, p *api.Proposal) (string, error) {
	if spec == nil {
		return "", fmt.Errorf("%s is not available to this agent now: decide on this proposal only", p.Command)
	}
	var pat permission.Pattern
	var err error
	if scope == api.ScopeDeny {
		pat, err = permission.DenyPattern(*spec, p.Args)
	} else {
		pat, err = permission.AlwaysPattern(*spec, p.Args)
	}
	if err != nil {
		if scope == api.ScopeAgent {
			return "", fmt.Errorf("y! cannot grant this proposal (%v): decide on it alone", err)
		}
		return "", fmt.Errorf("no pattern can be stored for this proposal (%v): decide on it alone", err)
	}
	return pat.String(), nil
}

// Owner is the agent whose mode (ask, auto for N steps, continuous) a's proposals
// follow: a itself, or for a helper its top agent, the one people started and set the
// policy on. `y -N` given on any agent of the family sets it there, and every agent of
// the family draws from the same N. The result is a itself or a fresh copy from tx.
func Owner(tx *store.Tx, a *store.Agent) (*store.Agent, error) {
	owner := a
	for hops := 0; owner.ParentID != "" && hops < MaxAncestors; hops++ {
		p, err := tx.Agent(owner.ParentID)
		if errors.Is(err, store.ErrNotFound) {
			break // a parent gone: the nearest one left decides
		} else if err != nil {
			return nil, err
		}
		owner = p
	}
	return owner, nil
}

// CaughtKey is the agent state key naming the proposal the watchdog last asked about:
// the policy never approves it unasked, not even after a resume.
const CaughtKey = "watchdog.caught"

// Caught reports whether the watchdog asked a person about p: the policy leaves it to them.
func Caught(tx *store.Tx, a *store.Agent, p *api.Proposal) (bool, error) {
	v, err := tx.StateValue(a.ID, CaughtKey)
	return err == nil && string(v) == p.ID, err
}
