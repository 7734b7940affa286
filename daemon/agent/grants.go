package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/commands/permission"
	"github.com/agentd/agentd/daemon/agent/cycle"
	"github.com/agentd/agentd/daemon/store"
)

// Grants are the standing decisions that approve more than one proposal: y -N (a count
// grant of the next N-1, for the run), y! (this exact command and args), a pattern added
// with `agentctl policy AGENT add`, and a run's auto steps (--auto N, a schedule's
// autonomy). They live in the store, so they survive a restart; cycle.Authorize weighs
// them with the rules, read fresh in each authorization, so a revoke holds from the next
// proposal on. The agent's Policy.Mode "auto" and AutoSteps only mirror its count grants.

const (
	defaultPreview = 20  // proposals a pattern grant's preview looks back over
	maxPreview     = 200 // and at most
)

// applyGrant records what authorization au did to grants in tx: a use of the grant that
// approved, or the grant a person's decision made (on owner, the top agent, for the
// whole family), whose id and label d then carries. The caller writes owner when it is
// not a and its mirror changed (reported by changed).
func applyGrant(tx *store.Tx, a, owner *store.Agent, au cycle.Authorization, d *api.Decision) (changed bool, err error) {
	switch {
	case au.Grant != nil:
		if err := tx.UseGrant(au.Grant.ID); err != nil {
			return false, err
		}
		if au.Grant.Kind != api.GrantCount {
			return false, nil
		}
	case au.NewGrant != nil:
		g := *au.NewGrant
		g.ID, g.AgentID = newID("g-"), owner.ID
		if g.Kind == api.GrantCount {
			// A new y -N replaces the count still running, as it always did.
			if err := endCountGrants(tx, owner, "replaced by "+g.ID); err != nil {
				return false, err
			}
		}
		if err := tx.InsertGrant(&g); err != nil {
			return false, err
		}
		if err := tx.Audit(a.ID, "grant", &g); err != nil {
			return false, err
		}
		d.Grant, d.GrantLabel = g.ID, g.Name()
		if g.Count > 0 {
			d.GrantCount, d.GrantLeft = g.Count, g.Left()
		}
	default:
		return false, nil
	}
	return syncPolicy(tx, owner)
}

// endCountGrants revokes owner's count grants still running, saying why.
func endCountGrants(tx *store.Tx, owner *store.Agent, why string) error {
	live, err := tx.LiveGrants(owner.ID, owner.RunID)
	if err != nil {
		return err
	}
	for _, g := range live {
		if g.Kind == api.GrantCount {
			if _, err := tx.RevokeGrant(g.ID, why); err != nil {
				return err
			}
		}
	}
	return nil
}

// syncPolicy sets owner's mode to mirror its count grants: auto with what is left of
// them on its current run, else back to ask. It reports whether that changed owner.
func syncPolicy(tx *store.Tx, owner *store.Agent) (bool, error) {
	live, err := tx.LiveGrants(owner.ID, owner.RunID)
	if err != nil {
		return false, err
	}
	left := 0
	for _, g := range live {
		if g.Kind == api.GrantCount && g.StateAt(tx.Now(), owner.RunID) == api.GrantActive {
			left += g.Left()
		}
	}
	mode := owner.Policy.Mode
	switch {
	case left > 0 && mode != "continuous":
		mode = "auto"
	case left == 0 && mode == "auto":
		mode = "ask"
	}
	if mode == owner.Policy.Mode && left == owner.Policy.AutoSteps {
		return false, nil
	}
	owner.Policy.Mode, owner.Policy.AutoSteps = mode, left
	return true, nil
}

// grantAutoSteps turns the auto steps a run starts with (--auto N, a schedule's
// autonomy) into a count grant of that run; a was just given opt's policy.
func grantAutoSteps(tx *store.Tx, a *store.Agent, by, source string) error {
	if a.Policy.Mode != "auto" || a.Policy.AutoSteps <= 0 {
		return nil
	}
	if err := endCountGrants(tx, a, "a new run's policy"); err != nil {
		return err
	}
	g := &api.Grant{ID: newID("g-"), AgentID: a.ID, Kind: api.GrantCount, By: by, Source: source,
		Label: fmt.Sprintf("auto mode for %d steps", a.Policy.AutoSteps), Count: a.Policy.AutoSteps, RunID: a.RunID}
	if name, ok := strings.CutPrefix(by, "schedule "); ok {
		g.Label = "autonomy of schedule " + name
	}
	if g.Source == "" {
		g.Source = "api"
	}
	if err := tx.InsertGrant(g); err != nil {
		return err
	}
	return tx.Audit(a.ID, "grant", g)
}

// Grants lists the agent's grants, newest first, each with its state now.
func (s *policyService) Grants(ctx context.Context, ref string) (*api.GrantList, error) {
	var out *api.GrantList
	err := s.st.View(ctx, func(tx *store.Tx) error {
		a, err := resolve(tx, ref)
		if err != nil {
			return err
		}
		owner, err := policyOwner(tx, a)
		if err != nil {
			return err
		}
		gs, err := tx.Grants(a.ID)
		if err != nil {
			return err
		}
		for i := range gs {
			gs[i].Mark(tx.Now(), owner.RunID)
		}
		out = &api.GrantList{AgentID: a.ID, Agent: a.Name, Grants: gs}
		return nil
	})
	return out, err
}

// RevokeGrant revokes one of the agent's grants. The next authorization reads grants
// afresh, so it approves nothing from the agent's next proposal on.
func (s *policyService) RevokeGrant(ctx context.Context, ref string, req api.RevokeRequest) (*api.Grant, error) {
	req.ID = strings.TrimSpace(req.ID)
	if req.ID == "" {
		return nil, badRequest("no grant id: `agentctl policy AGENT` lists them")
	}
	var g *api.Grant
	err := s.st.Tx(ctx, func(tx *store.Tx) error {
		a, err := resolve(tx, ref)
		if err != nil {
			return err
		}
		if g, err = tx.Grant(a.ID, req.ID); errors.Is(err, store.ErrNotFound) {
			return notFound("agent %s has no grant %s: `agentctl policy %s` lists its grants", a.Name, req.ID, a.Name)
		} else if err != nil {
			return err
		}
		if g.RevokedAt != nil {
			return conflict("grant %s was revoked already, by %s at %s", g.ID, g.RevokedBy, g.RevokedAt.Format(time.RFC3339))
		}
		if _, err := tx.RevokeGrant(g.ID, req.By); err != nil {
			return err
		}
		if g, err = tx.Grant(a.ID, req.ID); err != nil {
			return err
		}
		g.Mark(tx.Now(), "")
		if err := tx.Audit(a.ID, "grant_revoked", map[string]string{"grant": g.ID, "by": req.By, "was": g.Describe()}); err != nil {
			return err
		}
		if changed, err := syncPolicy(tx, a); err != nil || !changed {
			return err
		}
		return tx.UpdateAgent(a)
	})
	return g, err
}

// AddGrant previews a pattern grant — which of the agent's latest proposals it would
// have approved — and stores it unless req.DryRun. The preview and the authorization
// test proposals with the same cycle.Matches, so it approves exactly what it showed.
func (s *policyService) AddGrant(ctx context.Context, ref string, req api.GrantRequest) (*api.GrantPreview, error) {
	g, err := checkGrantRequest(req)
	if err != nil {
		return nil, err
	}
	n := req.Preview
	if n <= 0 {
		n = defaultPreview
	}
	n = min(n, maxPreview)
	l := s.live()
	var out *api.GrantPreview
	var agentID string
	err = s.st.Tx(ctx, func(tx *store.Tx) error {
		a, err := resolve(tx, ref)
		if err != nil {
			return err
		}
		agentID = a.ID
		if out, err = s.preview(ctx, l, tx, a, g, n); err != nil || req.DryRun {
			return err
		}
		if req.Run {
			owner, err := policyOwner(tx, a) // a helper's run ends with its top agent's
			if err != nil {
				return err
			}
			if owner.RunID == "" || !active(owner.State) {
				return conflict("agent %s has no run going: drop --run, or give it a task first", a.Name)
			}
			g.RunID = owner.RunID
		}
		if g.Expires > 0 {
			at := tx.Now().Add(g.Expires)
			g.ExpiresAt = &at
		}
		g.ID, g.AgentID = newID("g-"), a.ID
		if err := tx.InsertGrant(&g.Grant); err != nil {
			return err
		}
		if err := tx.Audit(a.ID, "grant", &g.Grant); err != nil {
			return err
		}
		g.Mark(tx.Now(), g.RunID)
		out.Grant = &g.Grant
		return nil
	})
	if err != nil {
		return nil, err
	}
	if !req.DryRun {
		s.kick(agentID) // a pending proposal may be approved by the new grant
	}
	return out, nil
}

// newGrant is a pattern grant being added, with its time bound still relative.
type newGrant struct {
	api.Grant
	Expires time.Duration
}

// checkGrantRequest checks req and returns the grant it asks for, without id or agent.
func checkGrantRequest(req api.GrantRequest) (newGrant, error) {
	var g newGrant
	pat, err := permission.Parse(strings.TrimSpace(req.Pattern))
	if err != nil {
		return g, badRequest("%v", err)
	}
	switch {
	case req.Count < 0:
		return g, badRequest("count %d: want 0 (no bound) or more", req.Count)
	case req.Source == "policy" || req.Source == cycle.SourceGrant || req.Source == "schedule" || req.Source == "config":
		return g, badRequest("source %q is the daemon's own: leave it empty or name the front end (agentctl, slack, discord)", req.Source)
	}
	if e := strings.TrimSpace(req.Expires); e != "" {
		if g.Expires, err = time.ParseDuration(e); err != nil || g.Expires <= 0 {
			return g, badRequest("expires %q: want a duration such as 30m or 8h", req.Expires)
		}
	}
	g.Kind, g.Pattern, g.Count, g.By, g.Source, g.Label = api.GrantPattern, pat.String(), req.Count, req.By, req.Source, "policy add"
	if g.Source == "" {
		g.Source = "api"
	}
	return g, nil
}

// preview weighs a's n latest proposals against grant g, with each command's spec as the
// agent has it now (as the authorization would).
func (s *policyService) preview(ctx context.Context, l *live, tx *store.Tx, a *store.Agent, g newGrant, n int) (*api.GrantPreview, error) {
	ps, err := tx.LatestProposals(a.ID, n)
	if err != nil {
		return nil, err
	}
	out := &api.GrantPreview{AgentID: a.ID, Pattern: g.Pattern, Looked: len(ps), Matches: []api.GrantMatch{}}
	opts := policyOptions(l, a)
	for i := range ps {
		p := &ps[i]
		spec := s.specIn(ctx, l, tx, a, p.Command)
		if !cycle.Matches(&g.Grant, p, spec, opts) {
			continue
		}
		subject := permission.Subject(*spec, p.Args)
		if subject == "" {
			subject = compactJSON(p.Args)
		}
		out.Matches = append(out.Matches, api.GrantMatch{ProposalID: p.ID, Step: p.Step, Command: p.Command, Subject: subject})
	}
	return out, nil
}

func compactJSON(b json.RawMessage) string {
	var v any
	if json.Unmarshal(b, &v) != nil {
		return string(b)
	}
	out, _ := json.Marshal(v)
	return string(out)
}

// policyOwner is the agent whose mode (ask, auto for N steps, continuous) a's proposals
// follow: a itself, or for a helper its top agent, the one people started and set the
// policy on. `y -N` given on any agent of the family sets it there, and every agent of
// the family draws from the same N. The result is a itself or a fresh copy from tx.
func policyOwner(tx *store.Tx, a *store.Agent) (*store.Agent, error) {
	owner := a
	for hops := 0; owner.ParentID != "" && hops < maxAncestors; hops++ {
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
