package agent

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentd/agentd/api"
)

// A decision that carries the hash of the proposal as shown is taken only on that
// proposal: a lowercase hex prefix of at least 16 characters of its Hash. Anything else
// is the conflict of a stale decision, naming the fix.
func TestDecideHashBindsToShownProposal(t *testing.T) {
	h := newHarness(t)
	h.fake.Script(reply("test_side_effect", map[string]string{"what": "a"}), reply("test_side_effect", map[string]string{"what": "b"}),
		reply("test_side_effect", map[string]string{"what": "c"}), reply("test_side_effect", map[string]string{"what": "d"}))
	a := h.create(api.CreateAgentRequest{Name: "a", Description: "d", Goals: []string{"g"}})
	const other = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	tests := []struct {
		name    string
		hash    func(p *api.Proposal) string
		refused bool
	}{
		{"prefix_15_refused", func(p *api.Proposal) string { return p.Hash[:15] }, true},
		{"uppercase_refused", func(p *api.Proposal) string { return strings.ToUpper(p.Hash[:16]) }, true},
		{"non_hex_refused", func(p *api.Proposal) string { return p.Hash[:16] + "zz" }, true},
		{"another_proposals_hash_refused", func(*api.Proposal) string { return other }, true},
		{"longer_than_hash_refused", func(p *api.Proposal) string { return p.Hash + "00" }, true},
		{"padded_refused", func(p *api.Proposal) string { return " " + p.Hash[:16] }, true},
		{"no_hash_decides", func(*api.Proposal) string { return "" }, false},
		{"prefix_16_decides", func(p *api.Proposal) string { return p.Hash[:16] }, false},
		{"full_hash_decides", func(p *api.Proposal) string { return p.Hash }, false},
	}
	last := ""
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := h.waitFor(a.ID, "a new pending proposal", func(a *api.Agent) bool {
				return a.State == api.StateAwaitingDecision && a.Pending != nil && a.Pending.ID != last
			}).Pending
			if len(p.Hash) != 64 || p.Hash == other {
				t.Fatalf("proposal hash = %q, want sha256 hex", p.Hash)
			}
			req := api.DecideRequest{ProposalID: p.ID, Kind: api.DecisionApprove, Hash: tt.hash(p), Source: "test", By: "tester"}
			_, err := h.sup.decisions.Decide(context.Background(), a.ID, req)
			if !tt.refused {
				if err != nil {
					t.Fatalf("hash %q: %v", req.Hash, err)
				}
				last = p.ID
				return
			}
			if !errors.Is(err, api.ErrConflict) || !strings.Contains(err.Error(), "changed since it was shown: decide on the one shown now") {
				t.Errorf("hash %q: err = %v, want a conflict naming the fix", req.Hash, err)
			}
			if got := h.pending(a.ID); got.ID != p.ID || got.Status != api.ProposalPending {
				t.Errorf("proposal decided by a refused decision: %+v", got)
			}
		})
	}
}

// A hash check never outranks the stale check: a decision on a superseded or decided
// proposal says so, whatever hash it carries.
func TestDecideHashOnDecidedProposalSaysDecided(t *testing.T) {
	h := newHarness(t)
	h.fake.Script(reply("test_side_effect", map[string]string{"what": "a"}), reply("test_side_effect", map[string]string{"what": "b"}))
	a := h.create(api.CreateAgentRequest{Name: "a", Description: "d", Goals: []string{"g"}})
	p := h.pending(a.ID)
	if _, err := h.decide(a.ID, p, "y"); err != nil {
		t.Fatal(err)
	}
	req := api.DecideRequest{ProposalID: p.ID, Kind: api.DecisionApprove, Hash: p.Hash[:16], Source: "test"}
	_, err := h.sup.decisions.Decide(context.Background(), a.ID, req)
	if !errors.Is(err, api.ErrConflict) || !strings.Contains(err.Error(), "already decided") {
		t.Errorf("err = %v, want conflict: already decided", err)
	}
}
