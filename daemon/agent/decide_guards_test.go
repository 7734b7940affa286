package agent

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/daemon/agent/cycle"
	"github.com/agentd/agentd/daemon/store"
)

// refusedBy runs guards in order over c and names the first that refuses, with its error.
func refusedBy(c *decisionCheck, guards []decisionGuard) (string, error) {
	for _, g := range guards {
		if err := g.check(c); err != nil {
			return g.name, err
		}
	}
	return "", nil
}

// A decision request is refused by the first guard it fails, in the order listed, with a
// message naming the fix; one that passes them all is left as the decision records it.
func TestDecisionRequestGuardsRefuseInOrder(t *testing.T) {
	approve, deny, feedback := api.DecisionApprove, api.DecisionDeny, api.DecisionFeedback
	cases := []struct {
		name      string
		req       api.DecideRequest
		refusedBy string
		says      string
	}{
		{"no_proposal_named", api.DecideRequest{Kind: approve}, "names_proposal", "proposal_id is required"},
		{"feedback_on_deny", api.DecideRequest{ProposalID: "p", Kind: deny, Feedback: "no"}, "fields_fit_kind", "feedback goes with kind feedback"},
		{"count_on_feedback", api.DecideRequest{ProposalID: "p", Kind: feedback, Feedback: "x", Count: 2}, "fields_fit_kind", "count goes with kind approve"},
		{"unknown_kind", api.DecideRequest{ProposalID: "p", Kind: "maybe"}, "kind_known", `kind "maybe"`},
		{"count_over_bound", api.DecideRequest{ProposalID: "p", Kind: approve, Count: maxApproveCount + 1}, "count_in_range", "want 1 to"},
		{"count_negative", api.DecideRequest{ProposalID: "p", Kind: approve, Count: -1}, "count_in_range", "count -1"},
		{"feedback_blank", api.DecideRequest{ProposalID: "p", Kind: feedback, Feedback: "  "}, "feedback_sendable", "feedback is empty"},
		{"feedback_asks_help", api.DecideRequest{ProposalID: "p", Kind: feedback, Feedback: "?"}, "feedback_sendable", "asks for help"},
		{"feedback_too_long", api.DecideRequest{ProposalID: "p", Kind: feedback, Feedback: strings.Repeat("x", api.MaxTextBytes+1)}, "feedback_sendable", "at most"},
		{"policy_source", api.DecideRequest{ProposalID: "p", Kind: approve, Source: "policy"}, "source_not_reserved", "reserved"},
		{"grant_source", api.DecideRequest{ProposalID: "p", Kind: approve, Source: cycle.SourceGrant}, "source_not_reserved", "reserved"},
		{"approve_always_with_count", api.DecideRequest{ProposalID: "p", Kind: approve, Count: 2, Scope: api.ScopeAgent}, "scope_fits_kind", "drop the count"},
		{"deny_always_on_approve", api.DecideRequest{ProposalID: "p", Kind: approve, Scope: api.ScopeDeny}, "scope_fits_kind", "goes with deny"},
		{"unknown_scope", api.DecideRequest{ProposalID: "p", Kind: approve, Scope: "forever"}, "scope_fits_kind", `scope "forever"`},
		{"plain_approve", api.DecideRequest{ProposalID: "p", Kind: approve}, "", ""},
		{"approve_n", api.DecideRequest{ProposalID: "p", Kind: approve, Count: 3}, "", ""},
		{"approve_always", api.DecideRequest{ProposalID: "p", Kind: approve, Scope: api.ScopeAgent}, "", ""},
		{"deny_always", api.DecideRequest{ProposalID: "p", Kind: deny, Scope: api.ScopeDeny}, "", ""},
		{"feedback", api.DecideRequest{ProposalID: "p", Kind: feedback, Feedback: " try the other file "}, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := &decisionCheck{req: tc.req}
			name, err := refusedBy(c, requestGuards)
			if name != tc.refusedBy {
				t.Fatalf("refused by %q (%v), want %q", name, err, tc.refusedBy)
			}
			if err != nil && !strings.Contains(err.Error(), tc.says) {
				t.Errorf("refusal %q does not say %q", err, tc.says)
			}
			if err != nil && !errors.Is(err, api.ErrBadRequest) {
				t.Errorf("refusal %q is not a bad request", err)
			}
		})
	}
}

// What passes the request guards is the decision as recorded: a plain y counts one,
// feedback is trimmed, a request naming no source came through the API.
func TestDecisionRequestGuardsNormalize(t *testing.T) {
	c := &decisionCheck{req: api.DecideRequest{ProposalID: "p", Kind: api.DecisionApprove}}
	if err := c.passes(requestGuards); err != nil || c.req.Count != 1 || c.req.Source != "api" {
		t.Fatalf("plain approve: count %d source %q (%v), want 1 and api", c.req.Count, c.req.Source, err)
	}
	c = &decisionCheck{req: api.DecideRequest{ProposalID: "p", Kind: api.DecisionFeedback, Feedback: "  use b.txt\n", Source: "slack"}}
	if err := c.passes(requestGuards); err != nil || c.req.Feedback != "use b.txt" || c.req.Source != "slack" {
		t.Fatalf("feedback: %q from %q (%v), want it trimmed from slack", c.req.Feedback, c.req.Source, err)
	}
}

// In the transaction that records it, a decision is refused by the first guard it fails:
// a proposal not the agent's, a pattern that cannot be stored, a proposal no longer open,
// a hash not the proposal's, a decision the policy does not let stand.
func TestDecisionRecordGuardsRefuseInOrder(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "agentd.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	const hash = "0123456789abcdef0123456789abcdef"
	a := &store.Agent{Agent: api.Agent{ID: "a-guard", Name: "guard", State: api.StateAwaitingDecision, RunID: "r-guard", Task: "t", Policy: api.Policy{Mode: "ask"}}}
	b := &store.Agent{Agent: api.Agent{ID: "a-other", Name: "other", State: api.StateAwaitingDecision, RunID: "r-other", Task: "t", Policy: api.Policy{Mode: "ask"}}}
	props := []*api.Proposal{
		{ID: "p-old", AgentID: a.ID, RunID: a.RunID, Step: 1, Command: "read_file", Args: []byte(`{}`), Hash: hash, Status: api.ProposalSuperseded},
		{ID: "p-done", AgentID: a.ID, RunID: a.RunID, Step: 2, Command: "read_file", Args: []byte(`{}`), Hash: hash, Status: api.ProposalSucceeded},
		{ID: "p-cur", AgentID: a.ID, RunID: a.RunID, Step: 3, Command: "read_file", Args: []byte(`{}`), Hash: hash, Status: api.ProposalPending},
		{ID: "p-theirs", AgentID: b.ID, RunID: b.RunID, Step: 1, Command: "read_file", Args: []byte(`{}`), Hash: hash, Status: api.ProposalPending},
	}
	err = st.Tx(ctx, func(tx *store.Tx) error {
		for _, ag := range []*store.Agent{a, b} {
			if err := tx.InsertAgent(ag); err != nil {
				return err
			}
			if err := tx.StartRun(ag.RunID, ag.ID, ag.Task); err != nil {
				return err
			}
		}
		for _, p := range props {
			if err := tx.InsertProposal(p); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	s := &decisions{st: st, live: func() *live { return &live{} },
		specIn: func(context.Context, *live, *store.Tx, *store.Agent, string) *commands.Spec { return nil }}
	approve := api.DecideRequest{Kind: api.DecisionApprove, Count: 1, Source: "api"}
	with := func(id string, edit func(*api.DecideRequest)) api.DecideRequest {
		r := approve
		r.ProposalID = id
		if edit != nil {
			edit(&r)
		}
		return r
	}
	cases := []struct {
		name      string
		req       api.DecideRequest
		refusedBy string
		code      error
		says      string
	}{
		{"unknown_proposal", with("p-none", nil), "proposal_of_agent", api.ErrNotFound, "has no proposal p-none"},
		{"another_agents_proposal", with("p-theirs", nil), "proposal_of_agent", api.ErrNotFound, "has no proposal p-theirs"},
		{"approve_always_without_command", with("p-cur", func(r *api.DecideRequest) { r.Scope = api.ScopeAgent }), "scope_storable", api.ErrBadRequest, "not available to this agent now"},
		{"superseded", with("p-old", nil), "proposal_open", api.ErrConflict, "was superseded"},
		{"ended", with("p-done", nil), "proposal_open", api.ErrConflict, "takes no decision now"},
		{"hash_too_short", with("p-cur", func(r *api.DecideRequest) { r.Hash = hash[:8] }), "shown_hash_matches", api.ErrConflict, "changed since it was shown"},
		{"hash_uppercase", with("p-cur", func(r *api.DecideRequest) { r.Hash = strings.ToUpper(hash[:16]) }), "shown_hash_matches", api.ErrConflict, "changed since it was shown"},
		{"hash_of_another", with("p-cur", func(r *api.DecideRequest) { r.Hash = "fedcba9876543210" }), "shown_hash_matches", api.ErrConflict, "changed since it was shown"},
		{"current_as_shown", with("p-cur", func(r *api.DecideRequest) { r.Hash = hash[:16] }), "", nil, ""},
		{"current_no_hash", with("p-cur", nil), "", nil, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var name string
			err := st.View(ctx, func(tx *store.Tx) error {
				c := &decisionCheck{s: s, ctx: ctx, req: tc.req, tx: tx, a: a,
					d: &api.Decision{ProposalID: tc.req.ProposalID, Kind: tc.req.Kind, Count: tc.req.Count, Source: tc.req.Source, Scope: tc.req.Scope}}
				var err error
				name, err = refusedBy(c, recordGuards)
				return err
			})
			if name != tc.refusedBy {
				t.Fatalf("refused by %q (%v), want %q", name, err, tc.refusedBy)
			}
			if tc.refusedBy == "" {
				return
			}
			if !errors.Is(err, tc.code) || !strings.Contains(err.Error(), tc.says) {
				t.Errorf("refusal %q: want a %s saying %q", err, tc.code, tc.says)
			}
		})
	}
}
