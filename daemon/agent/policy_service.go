package agent

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/commands/permission"
	"github.com/agentd/agentd/daemon/agent/cycle"
	"github.com/agentd/agentd/daemon/agent/policy"
	"github.com/agentd/agentd/daemon/config"
	"github.com/agentd/agentd/daemon/store"
)

// Commands lists the commands the agent may use now, in prompt order, with the policy
// that applies when no pattern matches and the patterns that can decide them. With ref ""
// it lists what a new agent without an [agents.NAME] section gets, under the global patterns.
func (s *policyService) Commands(ctx context.Context, ref string) ([]api.CommandInfo, error) {
	a := &store.Agent{}
	var view *api.PolicyView
	err := s.st.View(ctx, func(tx *store.Tx) (err error) {
		if ref != "" {
			if a, err = resolve(tx, ref); err != nil {
				return err
			}
		}
		view, err = s.policyView(tx, a)
		return err
	})
	if err != nil {
		return nil, err
	}
	l := s.live()
	step := s.stepOf(a)
	pipe := l.pipelineFor(a.Name)
	provider := map[string]string{}
	for _, name := range pipe.Names() {
		for _, c := range pipe.Only(name).Commands(ctx, step) {
			if _, ok := provider[c.Spec().Name]; !ok {
				provider[c.Spec().Name] = name
			}
		}
	}
	var parsed []permission.Pattern
	for _, p := range view.Permissions {
		pat, _ := permission.Parse(p.Pattern) // stored and config patterns were checked when saved
		parsed = append(parsed, pat)
	}
	out := []api.CommandInfo{}
	for _, c := range s.commandsFor(ctx, l, a, step) {
		spec := c.Spec()
		params, _ := json.Marshal(spec.Params)
		policy := "ask"
		switch {
		case spec.Name == commands.AskUser:
			policy = "allow (asking needs no approval)"
		case spec.Class == commands.ClassRead && l.AutoRead:
			policy = "allow (auto_read)"
		case spec.Class == commands.ClassExecute:
			policy = "ask (always, unless an allow pattern names it)"
		}
		info := api.CommandInfo{Name: spec.Name, Description: spec.Description, Class: string(spec.Class),
			Idempotent: spec.Idempotent, Params: params, Policy: policy, Provider: provider[spec.Name],
			Patterns: []api.Permission{}}
		for _, effect := range []string{"deny", "allow"} {
			for i, p := range view.Permissions {
				if p.Effect == effect && parsed[i].AppliesTo(spec, effect == "allow") {
					info.Patterns = append(info.Patterns, p)
				}
			}
		}
		out = append(out, info)
	}
	return out, nil
}

// Policy shows every pattern that applies to the agent: stored ones first (they are the
// agent's own), then its config section's, then the global ones.
func (s *policyService) Policy(ctx context.Context, ref string) (*api.PolicyView, error) {
	return onAgent(ctx, s.st.View, ref, s.policyView)
}

// policyView lists the patterns for agent a; the zero Agent (no agent) gets the global ones.
func (s *policyService) policyView(tx *store.Tx, a *store.Agent) (*api.PolicyView, error) {
	var stored []api.Permission
	if a.ID != "" {
		var err error
		if stored, err = tx.Permissions(a.ID); err != nil {
			return nil, err
		}
	}
	l := s.live()
	v := &api.PolicyView{AgentID: a.ID, AutoRead: l.AutoRead, Permissions: []api.Permission{}}
	for _, p := range stored {
		p.Source = "stored"
		v.Permissions = append(v.Permissions, p)
	}
	add := func(src string, r permission.Rules) {
		for _, p := range r.Deny {
			v.Permissions = append(v.Permissions, api.Permission{Effect: "deny", Pattern: p.String(), Source: src})
		}
		for _, p := range r.Allow {
			v.Permissions = append(v.Permissions, api.Permission{Effect: "allow", Pattern: p.String(), Source: src})
		}
	}
	if a.Name != "" {
		add("agent-config", l.policy.Agents[a.Name])
	}
	add("config", l.policy.Global)
	for i := range v.Permissions {
		describeReach(&v.Permissions[i])
	}
	if !s.checkpointsOn() && a.ID != "" {
		if rules, err := deniedRules(l, tx, a); err != nil {
			return nil, err
		} else if rules != nil {
			v.Warnings = append(v.Warnings, "checkpoints are off ([checkpoints] enabled = false), so "+config.NoSecondWall+
				": set [checkpoints] enabled = true in the config")
		}
	}
	return v, nil
}

// describeReach says what p means beyond the commands it names: how the programs an
// allow pattern approves run, and whether a deny keeps its paths from every program.
func describeReach(p *api.Permission) {
	pat, err := permission.Parse(p.Pattern)
	switch {
	case err != nil:
	case p.Effect == "allow":
		spec := commands.Spec{Name: pat.Command()}
		p.Profile = cycle.Profile(&spec, pat.Write())
	default:
		p.Paths = permission.Denied(permission.Rules{Deny: []permission.Pattern{pat}}) != nil
	}
}

// AddPermission stores a pattern for the agent (agentctl policy allow|deny).
func (s *policyService) AddPermission(ctx context.Context, ref string, req api.PermissionRequest) (*api.PolicyView, error) {
	v, err := s.changePermission(ctx, ref, req, "permission", func(tx *store.Tx, a *store.Agent, pat string) error {
		_, err := tx.AddPermission(a.ID, req.Effect, pat, req.By)
		return err
	})
	if err == nil {
		s.kick(v.AgentID) // a pending proposal may be decided by the new pattern
	}
	return v, err
}

// RemovePermission deletes a stored pattern of the agent.
func (s *policyService) RemovePermission(ctx context.Context, ref string, req api.PermissionRequest) (*api.PolicyView, error) {
	return s.changePermission(ctx, ref, req, "permission_removed", func(tx *store.Tx, a *store.Agent, pat string) error {
		if ok, err := tx.RemovePermission(a.ID, req.Effect, pat); err != nil || ok {
			return err
		}
		return notFound("agent %s has no stored %s pattern %s (patterns from config are changed in the config file)", a.Name, req.Effect, pat)
	})
}

// changePermission makes change, with req's pattern checked, to the stored patterns of
// agent ref, audits it as what, and returns the agent's patterns after it.
func (s *policyService) changePermission(ctx context.Context, ref string, req api.PermissionRequest, what string, change func(*store.Tx, *store.Agent, string) error) (*api.PolicyView, error) {
	pat, err := checkPermission(req)
	if err != nil {
		return nil, err
	}
	return onAgent(ctx, s.st.Tx, ref, func(tx *store.Tx, a *store.Agent) (*api.PolicyView, error) {
		if err := change(tx, a, pat); err != nil {
			return nil, err
		}
		if err := tx.Audit(a.ID, what, map[string]string{"effect": req.Effect, "pattern": pat, "by": req.By}); err != nil {
			return nil, err
		}
		return s.policyView(tx, a)
	})
}

func checkPermission(req api.PermissionRequest) (string, error) {
	if req.Effect != "allow" && req.Effect != "deny" {
		return "", badRequest("effect %q: use allow or deny", req.Effect)
	}
	pat, err := permission.Parse(strings.TrimSpace(req.Pattern))
	if err != nil {
		return "", badRequest("%v", err)
	}
	return pat.String(), nil
}

// TestPolicy says how the agent's authorization would decide a proposal of req.Command
// if the agent proposed it next, and why, without proposing it (agentctl policy AGENT
// test): the one authorize of real proposals decides, with the agent's grants and the
// files a y! bound as they are now, and the command's spec as the agent has it now (a
// command it is not offered asks, as its proposal would). Nothing is recorded.
func (s *policyService) TestPolicy(ctx context.Context, ref string, req api.PolicyTestRequest) (*api.PolicyTest, error) {
	if req.Command == "" {
		return nil, badRequest("no command: give the command to test, e.g. execute_shell")
	}
	l := s.live()
	var out *api.PolicyTest
	err := s.st.View(ctx, func(tx *store.Tx) error {
		a, err := resolve(tx, ref)
		if err != nil {
			return err
		}
		spec := s.specIn(ctx, l, tx, a, req.Command)
		if spec == nil {
			out = &api.PolicyTest{AgentID: a.ID, Command: req.Command, Args: req.Args, Subject: req.Subject, Effect: string(permission.Ask),
				Reason: "asking: " + req.Command + " is not available to agent " + a.Name + " now (see agentctl commands " + a.Name + ")"}
			return nil
		}
		args, err := testArgs(spec, req)
		if err != nil {
			return err
		}
		canon, err := commands.CanonicalArgs(args)
		if err != nil {
			return badRequest("args: %v", err)
		}
		p := &api.Proposal{ID: "test", AgentID: a.ID, RunID: a.RunID, Step: a.Step + 1, Command: spec.Name,
			Args: canon, Hash: Hash(spec.Name, canon), Status: api.ProposalPending}
		prev, err := testPrev(tx, a)
		if err != nil {
			return err
		}
		au, _, err := authorize(l, tx, a, p, prev, spec, nil)
		if err != nil {
			return err
		}
		out = &api.PolicyTest{AgentID: a.ID, Command: spec.Name, Args: args, Subject: permission.Subject(*spec, args),
			Effect: effectOf[au.Verdict], Source: au.Layer, Reason: au.Reason, Decision: au.Decision, Grant: au.Grant, Unbound: au.Unbound}
		if au.Decision != nil {
			out.Pattern = au.Decision.Pattern
		}
		layers, err := policy.Layers(l.policy, tx, a)
		if err != nil {
			return err
		}
		for _, c := range permission.Explain(*spec, args, policy.Options(l.policy, a), layers...).Commands {
			out.Commands = append(out.Commands, api.PolicyTestCommand{Command: c.Command, Effect: string(c.Effect),
				Pattern: c.Pattern, Source: c.Layer, Reason: c.Reason})
		}
		return nil
	})
	return out, err
}

// testPrev is the proposal a tested one would follow: the run's latest, or the one
// before it while the latest waits for a decision (the test then weighs it as that one).
func testPrev(tx *store.Tx, a *store.Agent) (*api.Proposal, error) {
	last, err := tx.LastProposal(a.ID, a.RunID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, nil
	case err != nil || !last.Status.Decidable():
		return last, err
	}
	return tx.ProposalBefore(last)
}

// effectOf names a verdict as the permission rules name their effects.
var effectOf = map[cycle.Verdict]string{cycle.Allow: string(permission.Allow), cycle.Ask: string(permission.Ask), cycle.Refuse: string(permission.Deny)}

// testArgs returns the args to test: req.Args, or req.Subject as the spec's subject arg.
func testArgs(spec *commands.Spec, req api.PolicyTestRequest) (json.RawMessage, error) {
	switch {
	case len(req.Args) > 0 && req.Subject != "":
		return nil, badRequest("give the args or the subject, not both")
	case len(req.Args) > 0:
		return req.Args, nil
	case spec.Subject == "":
		return nil, badRequest("%s has no single subject arg: give its args as JSON (agentctl policy AGENT test --command %s --args '{...}')", spec.Name, spec.Name)
	}
	return json.Marshal(map[string]string{spec.Subject: req.Subject})
}

// policyService serves the local API's policy endpoints: the commands an agent may use,
// its permission patterns, and how they would decide a proposal.
type policyService struct {
	commandSource
	st   *store.Store
	live func() *live    // the settings in use
	kick func(id string) // wakes an agent whose patterns changed
	// checkpointsOn says whether steps are checkpointed: without, deny rules warn.
	checkpointsOn func() bool
}

// commandSource is what the policy endpoints need of the agents' pipelines.
type commandSource interface {
	stepOf(a *store.Agent) *commands.Step
	commandsFor(ctx context.Context, l *live, a *store.Agent, step *commands.Step) commands.Set
	specIn(ctx context.Context, l *live, tx *store.Tx, a *store.Agent, name string) *commands.Spec
}

// DeniedPaths are the workspace paths agent ref's deny rules keep from its programs, as
// its sandboxed commands see them (sandboxProfile); nil when none.
func (s *policyService) DeniedPaths(ctx context.Context, ref string) (commands.PathRules, error) {
	return onAgent(ctx, s.st.View, ref, func(tx *store.Tx, a *store.Agent) (commands.PathRules, error) {
		return deniedRules(s.live(), tx, a)
	})
}
