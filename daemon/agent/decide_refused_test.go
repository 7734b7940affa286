package agent

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentd/agentd/api"
)

// A decision names its agent's proposal: agent B's ref cannot decide agent A's.
func TestDecideOtherAgentsProposalNotFound(t *testing.T) {
	h := newHarness(t)
	h.fake.Script(reply("test_side_effect", map[string]string{"what": "a"}), reply("test_side_effect", map[string]string{"what": "b"}))
	a := h.create(api.CreateAgentRequest{Name: "a", Description: "d", Goals: []string{"g"}})
	pa := h.pending(a.ID)
	b := h.create(api.CreateAgentRequest{Name: "b", Description: "d", Goals: []string{"g"}})
	h.pending(b.ID)
	for _, text := range []string{"y", "y -3", "n", "try again"} {
		if _, err := h.decide(b.ID, pa, text); !errors.Is(err, api.ErrNotFound) {
			t.Errorf("%q on a's proposal through b: err = %v, want not found", text, err)
		}
	}
	if got := h.pending(a.ID); got.ID != pa.ID {
		t.Errorf("a's proposal changed: %+v", got)
	}
}

// A stale decision after the run ended and a new task began is refused, and the new
// proposal is left to its own decision.
func TestDecideStaleAfterNewRunRefused(t *testing.T) {
	h := newHarness(t)
	h.fake.Script(reply("test_side_effect", map[string]string{"what": "a"}), reply("test_side_effect", map[string]string{"what": "b"}))
	a := h.create(api.CreateAgentRequest{Name: "a", Description: "d", Goals: []string{"g"}})
	old := h.pending(a.ID)
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
	h := newHarness(t)
	h.fake.Script(reply("test_side_effect", map[string]string{"what": "a"}), reply("test_side_effect", map[string]string{"what": "b"}))
	a := h.create(api.CreateAgentRequest{Name: "a", Description: "d", Goals: []string{"g"}})
	old := h.pending(a.ID)
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
	b.script("boss", reply("start_agent", map[string]string{"name": "a", "task": "t", "prompt": "go"}))
	b.script("boss/a", reply("write_file", map[string]string{"path": "x", "contents": "x"}))
	boss := h.boss()
	if _, err := h.decide(boss.ID, h.pending(boss.ID), "y"); err != nil {
		t.Fatal(err)
	}
	a := h.helper("boss/a")
	p := h.pending(a.ID)
	for _, text := range []string{"y", "y -3", "n", "no"} {
		if _, err := h.decide(boss.ID, p, text); !errors.Is(err, api.ErrNotFound) {
			t.Errorf("%q on the helper's proposal through its parent: err = %v, want not found", text, err)
		}
	}
	if got := h.pending(a.ID); got.ID != p.ID {
		t.Errorf("helper's proposal changed: %+v", got)
	}
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
