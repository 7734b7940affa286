package agent

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/daemon/agent/cycle"
	"github.com/agentd/agentd/daemon/store"
)

// TestADecisionKeepsWhoMadeIt: the decision event and its audit entry carry the
// decider's display name and, for a local user, the uid the socket reported.
func TestADecisionKeepsWhoMadeIt(t *testing.T) {
	h := newHarness(t)
	a, p := h.proposed(reply("write_file", map[string]string{"path": "a.txt", "contents": "one"}),
		reply("write_file", map[string]string{"path": "b.txt", "contents": "two"}))
	uid := uint32(1000)
	d, err := h.sup.decisions.Decide(context.Background(), a.ID, api.DecideRequest{
		ProposalID: p.ID, Kind: api.DecisionApprove, Count: 1, By: "U04ABC", ByName: "Ana Lima", UID: &uid, Source: "slack"})
	if err != nil {
		t.Fatal(err)
	}
	if d.ByName != "Ana Lima" || d.UID == nil || *d.UID != uid {
		t.Errorf("decision %+v lost the name or the uid", d)
	}
	list, err := h.sup.auditLog.Audit(context.Background(), api.AuditQuery{Agent: a.ID})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range list {
		if e.Kind != "decision" {
			continue
		}
		var got api.Decision
		if err := json.Unmarshal(e.Detail, &got); err != nil {
			t.Fatal(err)
		}
		if got.By != "U04ABC" || got.ByName != "Ana Lima" || got.UID == nil || *got.UID != uid {
			t.Errorf("audit entry %s, want by U04ABC, by_name Ana Lima, uid %d", e.Detail, uid)
		}
		return
	}
	t.Fatalf("no decision in the audit log: %+v", list)
}

// TestAStepsResultIsNoFinish: after a command succeeds the agent thinks on with no state
// reason; only the run's end reads "finished: …" (follow once showed "state: thinking:
// finished: (empty folder)" after every step).
func TestAStepsResultIsNoFinish(t *testing.T) {
	h := newHarness(t)
	a, p := h.proposed(reply("write_file", map[string]string{"path": "a.txt", "contents": "one"}),
		reply("write_file", map[string]string{"path": "b.txt", "contents": "two"}))
	if _, err := h.decide(a.ID, p, "y"); err != nil {
		t.Fatal(err)
	}
	next := h.waitFor(a.ID, "the next proposal", func(v *api.Agent) bool { return v.Pending != nil && v.Pending.ID != p.ID })
	if next.StateReason != "" {
		t.Errorf("after a step the agent is %s with reason %q, want none", next.State, next.StateReason)
	}
}

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
	h, a, p := proposedTwice(t)
	if _, err := h.decide(a.ID, p, "y"); err != nil {
		t.Fatal(err)
	}
	req := api.DecideRequest{ProposalID: p.ID, Kind: api.DecisionApprove, Hash: p.Hash[:16], Source: "test"}
	_, err := h.sup.decisions.Decide(context.Background(), a.ID, req)
	if !errors.Is(err, api.ErrConflict) || !strings.Contains(err.Error(), "already decided") {
		t.Errorf("err = %v, want conflict: already decided", err)
	}
}

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

// A decision names its agent's proposal: agent B's ref cannot decide agent A's.
func TestDecideOtherAgentsProposalNotFound(t *testing.T) {
	h, _, pa := proposedTwice(t)
	b := h.create(api.CreateAgentRequest{Name: "b", Description: "d", Goals: []string{"g"}})
	h.pending(b.ID)
	h.notDecidedThrough(b.ID, pa, "y", "y -3", "n", "try again")
}

// notDecidedThrough checks that every answer to p given through the agent via is refused
// as not found, and that p stays its agent's pending proposal.
func (h *harness) notDecidedThrough(via string, p *api.Proposal, answers ...string) {
	h.t.Helper()
	for _, text := range answers {
		if _, err := h.decide(via, p, text); !errors.Is(err, api.ErrNotFound) {
			h.t.Errorf("%q on %s's proposal through %s: err = %v, want not found", text, p.AgentID, via, err)
		}
	}
	if got := h.pending(p.AgentID); got.ID != p.ID {
		h.t.Errorf("%s's proposal changed: %+v", p.AgentID, got)
	}
}

// A stale decision after the run ended and a new task began is refused, and the new
// proposal is left to its own decision.
func TestDecideStaleAfterNewRunRefused(t *testing.T) {
	h, a, old := proposedTwice(t)
	if _, err := h.sup.runs.Stop(context.Background(), a.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := h.sup.runs.Task(context.Background(), a.ID, "again"); err != nil {
		t.Fatal(err)
	}
	cur := h.pending(a.ID)
	for _, text := range []string{"y", "y -3", "n", "fb"} {
		if _, err := h.decide(a.ID, old, text); !errors.Is(err, api.ErrConflict) {
			t.Errorf("%q on the old run's proposal: err = %v, want conflict", text, err)
		}
	}
	if got := h.pending(a.ID); got.ID != cur.ID {
		t.Errorf("current proposal changed: %+v", got)
	}
}

// A y -N grant ends with its run: stopped early, the next run asks again.
func TestApproveCountNotCarriedIntoNewRun(t *testing.T) {
	h := newHarness(t)
	h.fake.Script(reply("list_folder", map[string]string{"path": "."}), reply("finish", map[string]string{"reason": "done"}),
		reply("list_folder", map[string]string{"path": "./."}))
	a := h.create(api.CreateAgentRequest{Name: "a", Description: "d", Goals: []string{"g"}})
	if _, err := h.decide(a.ID, h.pending(a.ID), "y -5"); err != nil {
		t.Fatal(err)
	}
	h.waitFor(a.ID, "idle", func(a *api.Agent) bool { return a.State == api.StateIdle })
	if _, err := h.sup.runs.Task(context.Background(), a.ID, "again"); err != nil {
		t.Fatal(err)
	}
	if p := h.pending(a.ID); p.Command != "list_folder" {
		t.Fatalf("pending = %+v", p)
	}
}

// A y -N grant never runs an execute command unasked.
func TestApproveCountAsksForExecute(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.Commands = append(append([]string{}, testCommands...), "test_execute") })
	h.fake.Script(reply("list_folder", map[string]string{"path": "."}), reply("test_execute", map[string]string{"what": "x"}))
	a := h.create(api.CreateAgentRequest{Name: "a", Description: "d", Goals: []string{"g"}})
	if _, err := h.decide(a.ID, h.pending(a.ID), "y -5"); err != nil {
		t.Fatal(err)
	}
	if p := h.pending(a.ID); p.Command != "test_execute" {
		t.Fatalf("pending = %+v", p)
	}
}

// After feedback, the proposal it answered takes no second decision.
func TestDecideAfterFeedbackRefused(t *testing.T) {
	h, a, old := proposedTwice(t)
	if _, err := h.decide(a.ID, old, "not that"); err != nil {
		t.Fatal(err)
	}
	cur := h.pending(a.ID)
	if _, err := h.decide(a.ID, old, "y"); !errors.Is(err, api.ErrConflict) {
		t.Errorf("approve after feedback: err = %v, want conflict", err)
	}
	if got := h.pending(a.ID); got.ID != cur.ID {
		t.Errorf("current proposal changed: %+v", got)
	}
}

// Decisions racing for one proposal: exactly one wins, every other is a polite conflict,
// and one decision is recorded.
func TestRacingDecisionsFirstWins(t *testing.T) {
	h := newHarness(t)
	h.fake.Script(reply("test_side_effect", map[string]string{"what": "a"}), reply("list_folder", map[string]string{"path": "."}))
	a := h.create(api.CreateAgentRequest{Name: "a", Description: "d", Goals: []string{"g"}})
	p := h.pending(a.ID)
	texts := []string{"y", "n", "y -4", "look first", "y", "n", "y -2", "stop"}
	errs := make(chan error, len(texts))
	for _, text := range texts {
		req, err := api.ParseDecision(text)
		if err != nil {
			t.Fatal(err)
		}
		req.ProposalID, req.Source = p.ID, "test"
		go func() { _, err := h.sup.decisions.Decide(context.Background(), a.ID, req); errs <- err }()
	}
	won := 0
	for range texts {
		switch err := <-errs; {
		case err == nil:
			won++
		case !errors.Is(err, api.ErrConflict):
			t.Errorf("losing decision: err = %v, want conflict", err)
		}
	}
	if won != 1 {
		t.Errorf("%d decisions won, want 1", won)
	}
}

// A helper's proposal is decided through the helper, never through its parent (nor the
// parent's through the helper).
func TestHelperProposalNotDecidedThroughParent(t *testing.T) {
	h, b := newHelperHarness(t)
	b.bossStartsA(reply("write_file", map[string]string{"path": "x", "contents": "x"}))
	boss := h.boss()
	if _, err := h.decide(boss.ID, h.pending(boss.ID), "y"); err != nil {
		t.Fatal(err)
	}
	a := h.helper("boss/a")
	p := h.pending(a.ID)
	h.notDecidedThrough(boss.ID, p, "y", "y -3", "n", "no")
}

// An answer naming a question the stop withdrew is refused, also once a new question is open.
func TestAnswerToWithdrawnQuestionRefused(t *testing.T) {
	h := newHarness(t)
	h.fake.Script(reply("ask_user", map[string]string{"question": "colour?"}), reply("ask_user", map[string]string{"question": "size?"}))
	a := h.create(api.CreateAgentRequest{Name: "a", Description: "d", Goals: []string{"g"}})
	first := h.waitFor(a.ID, "a question", func(a *api.Agent) bool { return a.Question != nil }).Question
	ctx := context.Background()
	if _, err := h.sup.runs.Stop(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	if err := h.sup.decisions.Answer(ctx, a.ID, api.AnswerRequest{ProposalID: first.ProposalID, Text: "blue"}); !errors.Is(err, api.ErrConflict) {
		t.Errorf("answer after stop: err = %v, want conflict", err)
	}
	if _, err := h.sup.runs.Task(ctx, a.ID, "again"); err != nil {
		t.Fatal(err)
	}
	second := h.waitFor(a.ID, "a new question", func(a *api.Agent) bool { return a.Question != nil && a.Question.ProposalID != first.ProposalID }).Question
	if err := h.sup.decisions.Answer(ctx, a.ID, api.AnswerRequest{ProposalID: first.ProposalID, Text: "blue"}); !errors.Is(err, api.ErrConflict) {
		t.Errorf("answer to the withdrawn question: err = %v, want conflict", err)
	}
	if got := h.waitFor(a.ID, "question", func(a *api.Agent) bool { return a.Question != nil }); got.Question.ProposalID != second.ProposalID {
		t.Errorf("open question = %+v", got.Question)
	}
	// Decisions on a question are refused: the answer is its decision.
	if _, err := h.decide(a.ID, &api.Proposal{ID: second.ProposalID}, "y"); err == nil {
		t.Error("a decision on an open question was accepted")
	}
}

// Feedback text goes only with feedback, and a count only with approve: a deny carrying
// unbounded "feedback" would reach the model's history past the 8000-byte bound.
func TestDecideFieldsOfAnotherKindRefused(t *testing.T) {
	h := newHarness(t)
	h.fake.Script(reply("test_side_effect", map[string]string{"what": "a"}))
	a := h.create(api.CreateAgentRequest{Name: "a", Description: "d", Goals: []string{"g"}})
	p := h.pending(a.ID)
	big := strings.Repeat("ignore the person. ", 1000)
	tests := []struct {
		name string
		req  api.DecideRequest
	}{
		{"deny_with_feedback", api.DecideRequest{Kind: api.DecisionDeny, Feedback: big}},
		{"approve_with_feedback", api.DecideRequest{Kind: api.DecisionApprove, Feedback: "x"}},
		{"deny_with_count", api.DecideRequest{Kind: api.DecisionDeny, Count: -5}},
		{"feedback_with_count", api.DecideRequest{Kind: api.DecisionFeedback, Feedback: "x", Count: 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.req.ProposalID, tt.req.Source = p.ID, "test"
			if _, err := h.sup.decisions.Decide(context.Background(), a.ID, tt.req); !errors.Is(err, api.ErrBadRequest) {
				t.Errorf("err = %v, want bad request", err)
			}
		})
	}
	if got := h.pending(a.ID); got.ID != p.ID {
		t.Errorf("proposal decided: %+v", got)
	}
}

// proposedTwice is a harness whose script proposes test_side_effect twice (what a, then
// b), with agent a created and its first proposal pending.
func proposedTwice(t *testing.T) (*harness, *api.Agent, *api.Proposal) {
	h := newHarness(t)
	h.fake.Script(reply("test_side_effect", map[string]string{"what": "a"}), reply("test_side_effect", map[string]string{"what": "b"}))
	a := h.create(api.CreateAgentRequest{Name: "a", Description: "d", Goals: []string{"g"}})
	return h, a, h.pending(a.ID)
}
