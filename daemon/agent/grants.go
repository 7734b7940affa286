package agent

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/commands/permission"
	"github.com/agentd/agentd/daemon/agent/cycle"
	"github.com/agentd/agentd/daemon/agent/policy"
	"github.com/agentd/agentd/daemon/store"
	"github.com/agentd/agentd/internal/randid"
)

const (
	defaultPreview = 20  // proposals a pattern grant's preview looks back over
	maxPreview     = 200 // and at most
)

// Grants lists the agent's grants, newest first, each with its state now.
func (s *policyService) Grants(ctx context.Context, ref string) (*api.GrantList, error) {
	return onAgent(ctx, s.st.View, ref, func(tx *store.Tx, a *store.Agent) (*api.GrantList, error) {
		owner, err := policy.Owner(tx, a)
		if err != nil {
			return nil, err
		}
		gs, err := tx.Grants(a.ID)
		for i := range gs {
			gs[i].Mark(tx.Now(), owner.RunID)
		}
		return &api.GrantList{AgentID: a.ID, Agent: a.Name, Grants: gs}, err
	})
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
		if changed, err := policy.SyncPolicy(tx, a); err != nil || !changed {
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
			owner, err := policy.Owner(tx, a) // a helper's run ends with its top agent's
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
		g.ID, g.AgentID = randid.ID("g-"), a.ID
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
	opts := policy.Options(l.policy, a)
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
