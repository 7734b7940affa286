package agent

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/daemon/agent/cycle"
	"github.com/agentd/agentd/daemon/agent/policy"
	"github.com/agentd/agentd/daemon/store"
	"github.com/agentd/agentd/internal/display"
)

// Why explains the decision on the agent's last decided proposal, from the stored
// decision: a person's (who, from where) or the policy's (the pattern and its layer, or
// the mode that approved).
func (s *policyService) Why(ctx context.Context, ref string) (*api.Why, error) {
	w, err := onAgent(ctx, s.st.View, ref, func(tx *store.Tx, a *store.Agent) (*api.Why, error) {
		ps, err := tx.Proposals(a.ID)
		if err != nil {
			return nil, err
		}
		for i := len(ps) - 1; i >= 0; i-- {
			d, err := tx.LastDecision(ps[i].ID)
			if errors.Is(err, store.ErrNotFound) {
				continue
			} else if err != nil {
				return nil, err
			}
			return &api.Why{AgentID: a.ID, Agent: a.Name, Proposal: ps[i], Decision: *d}, nil
		}
		return nil, notFound("agent %s has no decided proposal yet: `agentctl show %s` shows what it waits for", a.Name, a.Name)
	})
	if err != nil {
		return nil, err
	}
	if id := w.Decision.Grant; id != "" {
		if w.Grant, err = s.grantNow(ctx, w.AgentID, id); err != nil {
			return nil, err
		}
	}
	if w.Decision.Source == "policy" && w.Decision.Pattern != "" {
		pv, err := s.Policy(ctx, w.AgentID)
		if err != nil {
			return nil, err
		}
		for _, p := range pv.Permissions {
			if p.Pattern == w.Decision.Pattern {
				w.Layer = p.Source
				break
			}
		}
	}
	w.Reason = whyReason(w)
	return w, nil
}

// whyReason says in one sentence who or what decided w's proposal.
func whyReason(w *api.Why) string {
	d := &w.Decision
	in := ""
	if w.Layer != "" {
		in = " (" + w.Layer + ")"
	}
	switch {
	case d.Source == cycle.SourceGrant:
		return "approved by " + d.GrantText() + " (grant " + d.Grant + "), without asking"
	case d.Source == "policy" && d.Kind == api.DecisionApprove && d.Pattern != "":
		return "auto-approved by the allow pattern " + d.Pattern + in
	case d.Source == "policy" && d.Kind == api.DecisionApprove && d.By == "auto_read":
		return "auto-approved: a read command, and the agent's policy runs reads unasked (auto_read)"
	case d.Source == "policy" && d.Kind == api.DecisionApprove:
		return "approved by the policy mode " + d.By
	case d.Source == "policy":
		return "refused by the deny pattern " + d.Pattern + in + ": the model was told to choose another way"
	}
	who := cycle.Who(d)
	switch d.Kind {
	case api.DecisionApprove:
		switch {
		case d.Scope == api.ScopeAgent && d.Pattern != "": // stored before grants: y! kept a pattern
			return "approved by " + who + ", who also allowed " + d.Pattern + " for the agent from then on"
		case d.Scope == api.ScopeAgent:
			return "approved by " + who + ", who also granted this exact command with these args from then on (grant " + d.Grant + ")"
		case d.Count > 1 && d.Grant != "":
			return fmt.Sprintf("approved by %s for this and the next %s (y -%d, grant %s)", who, nextProposals(d.Count-1), d.Count, d.Grant)
		case d.Count > 1:
			return fmt.Sprintf("approved by %s for this and the next %s (y -%d)", who, nextProposals(d.Count-1), d.Count)
		}
		return "approved by " + who
	case api.DecisionDeny:
		if d.Scope == api.ScopeDeny {
			return "denied by " + who + ", who also denied " + d.Pattern + " for the agent from then on"
		}
		return "denied by " + who + "; the run stopped"
	}
	return "not run: " + who + " answered with feedback, which went to the model"
}

// grantNow is grant id of agent agentID (or of its top agent, which holds a family's
// y -N and y! grants) as it stands now; nil when neither has it any more.
func (s *policyService) grantNow(ctx context.Context, agentID, id string) (*api.Grant, error) {
	var g *api.Grant
	err := s.st.View(ctx, func(tx *store.Tx) error {
		a, err := tx.Agent(agentID)
		if err != nil {
			return err
		}
		owner, err := policy.Owner(tx, a)
		if err != nil {
			return err
		}
		for _, holder := range []*store.Agent{a, owner} {
			if g, err = tx.Grant(holder.ID, id); err == nil {
				g.Mark(tx.Now(), owner.RunID)
				return nil
			} else if !errors.Is(err, store.ErrNotFound) {
				return err
			}
		}
		g = nil
		return nil
	})
	return g, err
}

// nextProposals is "proposal" or "N proposals", after "the next".
func nextProposals(n int) string {
	if n == 1 {
		return "proposal"
	}
	return display.Count(n, "proposal", "proposals")
}
