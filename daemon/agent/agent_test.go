package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	ollama "github.com/ollama/ollama/api"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/internal/testutil"
)

func TestApproveRunsAndFinishes(t *testing.T) {
	h := newHarness(t)
	a, p := h.proposed(reply("write_file", map[string]string{"path": "notes/a.txt", "contents": "hello"}), reply("finish", map[string]string{"reason": "done"}))
	if p.Command != "write_file" || p.Step != 1 || p.Hash == "" {
		t.Fatalf("proposal = %+v", p)
	}
	if _, err := h.decide(a.ID, p, "y"); err != nil {
		t.Fatal(err)
	}
	p2 := h.pending(a.ID)
	if p2.Command != "finish" || p2.Step != 2 {
		t.Fatalf("second proposal = %+v", p2)
	}
	b, err := os.ReadFile(filepath.Join(a.Workspace, "notes", "a.txt"))
	if err != nil || string(b) != "hello" {
		t.Fatalf("file = %q, %v", b, err)
	}
	h.decide(a.ID, p2, "yes")
	done := h.waitFor(a.ID, "idle", func(a *api.Agent) bool { return a.State == api.StateIdle })
	if !strings.Contains(done.StateReason, "done") {
		t.Errorf("reason = %q", done.StateReason)
	}
	eps := h.history(a.ID)
	if len(eps) != 2 || eps[0].Outcome != "succeeded" || eps[1].Command != "finish" {
		t.Fatalf("history = %+v", eps)
	}
	// The second prompt carried the first episode.
	reqs := h.fake.Requests()
	last := reqs[len(reqs)-1].Messages
	if !strings.Contains(joinContent(last), "Step 1: write_file") {
		t.Errorf("second prompt has no progress:\n%s", joinContent(last))
	}
}

func joinContent(msgs []ollama.Message) string {
	var b strings.Builder
	for _, m := range msgs {
		b.WriteString(m.Content)
		b.WriteByte('\n')
	}
	return b.String()
}

func TestApproveCountRunsNextWithoutAsking(t *testing.T) {
	h := newHarness(t)
	for i := 0; i < 4; i++ {
		// Four different calls: "./." would be the same folder, a loop the watchdog stops.
		h.fake.Script(reply("write_file", map[string]string{"path": fmt.Sprintf("n%d.txt", i), "contents": "x"}))
	}
	a := h.create(api.CreateAgentRequest{})
	p := h.pending(a.ID)
	if _, err := h.decide(a.ID, p, "y -3"); err != nil {
		t.Fatal(err)
	}
	p4 := h.pending(a.ID)
	if p4.Step != 4 {
		t.Fatalf("asked again at step %d, want 4", p4.Step)
	}
	if n := len(h.history(a.ID)); n != 3 {
		t.Fatalf("%d episodes, want 3", n)
	}
	got, _ := h.sup.agentViews.Agent(context.Background(), a.ID)
	if got.Policy.Mode != "ask" || got.Policy.AutoSteps != 0 {
		t.Errorf("policy after y -3 used up = %+v", got.Policy)
	}
}

func TestDenyStopsRun(t *testing.T) {
	h := newHarness(t)
	a, p := h.proposed(reply("test_side_effect", map[string]string{"what": "x"}))
	if _, err := h.decide(a.ID, p, "n"); err != nil {
		t.Fatal(err)
	}
	got := h.waitFor(a.ID, "idle", func(a *api.Agent) bool { return a.State == api.StateIdle })
	if got.Pending != nil || !strings.Contains(got.StateReason, "denied") {
		t.Errorf("agent = %+v", got)
	}
	eps := h.history(a.ID)
	if len(eps) != 1 || eps[0].Outcome != "denied" {
		t.Fatalf("history = %+v", eps)
	}
	// A second decision on the same proposal is refused.
	if _, err := h.decide(a.ID, p, "y"); !errors.Is(err, api.ErrConflict) {
		t.Fatalf("second decision err = %v, want conflict", err)
	}
}

func TestFeedbackGoesToModel(t *testing.T) {
	h := newHarness(t)
	h.fake.Script(reply("test_side_effect", map[string]string{"what": "x"}), reply("list_folder", map[string]string{"path": "."}))
	before := sideEffects()
	a := h.create(api.CreateAgentRequest{})
	p := h.pending(a.ID)
	if _, err := h.decide(a.ID, p, "please look around first"); err != nil {
		t.Fatal(err)
	}
	p2 := h.pending(a.ID)
	if p2.Command != "list_folder" {
		t.Fatalf("next = %+v", p2)
	}
	reqs := h.fake.Requests()
	if !strings.Contains(joinContent(reqs[len(reqs)-1].Messages), "Human feedback: please look around first") {
		t.Error("feedback missing from the next prompt")
	}
	if sideEffects() != before {
		t.Error("feedback ran the command")
	}
}

func TestInvalidRepliesPauseAfterThreeStrikes(t *testing.T) {
	h := newHarness(t)
	h.fake.SetDefault(func(*ollama.ChatRequest) string { return `{"thoughts": {}, "command": {"name": "rm_rf"}}` })
	a := h.create(api.CreateAgentRequest{})
	got := h.waitFor(a.ID, "paused", func(a *api.Agent) bool { return a.State == api.StatePaused })
	if !strings.Contains(got.StateReason, "3 invalid replies") {
		t.Errorf("reason = %q", got.StateReason)
	}
	if n := len(h.fake.Requests()); n != 6 {
		t.Errorf("%d model calls, want 6 (3 strikes × 1 retry each)", n)
	}
}

func TestRepairedReplyAccepted(t *testing.T) {
	h := newHarness(t)
	h.fake.Script("Sure! ```json\n" + reply("list_folder", map[string]string{"path": "."}) + "\n```")
	a := h.create(api.CreateAgentRequest{})
	if p := h.pending(a.ID); p.Command != "list_folder" {
		t.Fatalf("proposal = %+v", p)
	}
}

func TestRepeatRethinksWithSmartModel(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.SmartModel = "smart" })
	same := reply("list_folder", map[string]string{"path": "."})
	h.fake.Script(same, same, reply("read_file", map[string]string{"path": "a"}))
	a := h.create(api.CreateAgentRequest{})
	h.decide(a.ID, h.pending(a.ID), "y")
	p := h.pending(a.ID)
	if p.Command != "read_file" || p.Model != "smart" {
		t.Fatalf("after a repeat: %+v", p)
	}
	reqs := h.fake.Requests()
	if reqs[2].Model != "smart" || !strings.Contains(joinContent(reqs[2].Messages), "twice in a row") {
		t.Errorf("rethink request: model %s", reqs[2].Model)
	}
}

func TestRepeatWithoutSmartModelAsks(t *testing.T) {
	h := newHarness(t, func(o *Options) {})
	same := reply("list_folder", map[string]string{"path": "."})
	h.fake.Script(same, same)
	a := h.create(api.CreateAgentRequest{Policy: &api.Policy{Mode: "continuous"}})
	got := h.waitFor(a.ID, "a question about the repeat", func(a *api.Agent) bool {
		return a.State == api.StateAwaitingDecision && a.Pending != nil && a.Pending.Step == 2
	})
	if !strings.Contains(got.StateReason, "twice in a row") {
		t.Errorf("reason = %q", got.StateReason)
	}
}

func TestAskUserAnswerBecomesResult(t *testing.T) {
	h := newHarness(t)
	h.fake.Script(reply("ask_user", map[string]string{"question": "which colour?"}), reply("finish", map[string]string{"reason": "ok"}))
	a := h.create(api.CreateAgentRequest{})
	got := h.waitFor(a.ID, "a question", func(a *api.Agent) bool { return a.Question != nil })
	if got.Question.Text != "which colour?" || got.State != api.StateAwaitingDecision {
		t.Fatalf("agent = %+v", got)
	}
	// A lone "?" asks how to answer: refused, and the question still waits.
	if err := h.sup.decisions.Answer(context.Background(), a.ID, api.AnswerRequest{Text: " ? "}); !errors.Is(err, api.ErrBadRequest) || !strings.Contains(err.Error(), "still waits") {
		t.Fatalf("answer \"?\": err = %v, want a bad request saying the question waits", err)
	}
	if err := h.sup.decisions.Answer(context.Background(), a.ID, api.AnswerRequest{Text: "blue"}); err != nil {
		t.Fatal(err)
	}
	if p := h.pending(a.ID); p.Command != "finish" {
		t.Fatalf("after answer: %+v", p)
	}
	eps := h.history(a.ID)
	if len(eps) != 1 || !strings.Contains(eps[0].Result, "blue") {
		t.Fatalf("history = %+v", eps)
	}
	if err := h.sup.decisions.Answer(context.Background(), a.ID, api.AnswerRequest{Text: "red"}); !errors.Is(err, api.ErrConflict) {
		t.Errorf("second answer err = %v", err)
	}
}

func TestFollowUpTaskKeepsHistory(t *testing.T) {
	h := newHarness(t)
	h.fake.Script(reply("finish", map[string]string{"reason": "first done"}), reply("list_folder", map[string]string{"path": "."}))
	a := h.create(api.CreateAgentRequest{})
	h.decide(a.ID, h.pending(a.ID), "y")
	first := h.waitFor(a.ID, "idle", func(a *api.Agent) bool { return a.State == api.StateIdle })
	next, err := h.sup.runs.Task(context.Background(), a.ID, "now the second thing")
	if err != nil {
		t.Fatal(err)
	}
	if next.RunID == first.RunID {
		t.Error("follow-up task kept the old run id")
	}
	p := h.pending(a.ID)
	if p.RunID != next.RunID || p.Step != 1 {
		t.Fatalf("proposal = %+v", p)
	}
	reqs := h.fake.Requests()
	prompt := joinContent(reqs[len(reqs)-1].Messages)
	if !strings.Contains(prompt, "now the second thing") || !strings.Contains(prompt, "finish") {
		t.Errorf("follow-up prompt lacks task or history:\n%s", prompt)
	}
	if _, err := h.sup.runs.Task(context.Background(), a.ID, "third"); !errors.Is(err, api.ErrConflict) {
		t.Errorf("task while busy err = %v", err)
	}
}

func TestWorkspaceEscapeFails(t *testing.T) {
	h := newHarness(t)
	h.fake.Script(reply("write_file", map[string]string{"path": "../../escape.txt", "contents": "x"}))
	a := h.create(api.CreateAgentRequest{})
	h.decide(a.ID, h.pending(a.ID), "y")
	h.waitFor(a.ID, "an episode", func(*api.Agent) bool { return len(h.history(a.ID)) == 1 })
	ep := h.history(a.ID)[0]
	if ep.Outcome != "failed" || !strings.Contains(ep.Result, "workspace") {
		t.Fatalf("episode = %+v", ep)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(filepath.Dir(a.Workspace)), "escape.txt")); err == nil {
		t.Fatal("file written outside the workspace")
	}
}

func TestCrashDuringNonIdempotentCommandAsksAgain(t *testing.T) {
	h := newHarness(t)
	a, p := h.proposed(reply("test_side_effect", map[string]string{"what": "x"}))
	h.startedAtCrash(p, nil)
	before := sideEffects()
	h.start()
	got := h.waitFor(a.ID, "the interrupted proposal", func(a *api.Agent) bool {
		return a.Pending != nil && a.Pending.Status == api.ProposalInterrupted
	})
	if got.State != api.StateAwaitingDecision || !strings.Contains(got.StateReason, "decide again") {
		t.Fatalf("agent = %+v", got)
	}
	if sideEffects() != before {
		t.Fatal("interrupted command was re-run without asking")
	}
	h.fake.Script(reply("finish", map[string]string{"reason": "ok"}))
	h.decide(a.ID, got.Pending, "y")
	h.waitFor(a.ID, "re-run", func(*api.Agent) bool { return len(h.history(a.ID)) == 1 })
	if n := sideEffects() - before; n != 1 {
		t.Fatalf("side effect ran %d times after approval, want 1", n)
	}
}

func TestCrashDuringIdempotentCommandReruns(t *testing.T) {
	h := newHarness(t)
	a, p := h.proposed(reply("write_file", map[string]string{"path": "a.txt", "contents": "x"}))
	h.startedAtCrash(p, nil)
	h.start()
	h.waitFor(a.ID, "the re-run", func(*api.Agent) bool { return len(h.history(a.ID)) == 1 })
	if _, err := os.Stat(filepath.Join(a.Workspace, "a.txt")); err != nil {
		t.Fatal(err)
	}
}

func TestModelDownWaitsThenContinues(t *testing.T) {
	h := newHarness(t)
	h.fake.SetDown(true)
	a := h.create(api.CreateAgentRequest{})
	got := h.waitFor(a.ID, "waiting_for_model", func(a *api.Agent) bool { return a.State == api.StateWaitingForModel })
	if got.StateReason == "" {
		t.Error("no reason shown while waiting for the model")
	}
	if st, _ := h.sup.agentViews.Status(context.Background()); st.Ollama.Reachable || st.Ollama.Error == "" {
		t.Errorf("status while Ollama is down: %+v", st.Ollama)
	}
	h.fake.Script(reply("list_folder", map[string]string{"path": "."}))
	h.fake.SetDown(false)
	h.pending(a.ID)
}

func TestMissingModelSaysPull(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.Model = "nope" })
	a := h.create(api.CreateAgentRequest{})
	got := h.waitFor(a.ID, "waiting_for_model", func(a *api.Agent) bool { return a.State == api.StateWaitingForModel })
	if !strings.Contains(got.StateReason, "ollama pull nope") {
		t.Errorf("reason = %q", got.StateReason)
	}
	if st, _ := h.sup.agentViews.Status(context.Background()); !st.Ollama.Reachable || st.Ollama.ModelPresent {
		t.Errorf("status with the model missing: %+v", st.Ollama)
	}
}

func TestProfileGeneratedFromTask(t *testing.T) {
	h := newHarness(t)
	h.fake.Script(`{"name": "Haiku Writer", "description": "writes haiku", "best_practices": ["count syllables"], "constraints": ["stay short"]}`,
		reply("finish", map[string]string{"reason": "ok"}))
	a := h.create(api.CreateAgentRequest{Task: "write a haiku"})
	p := h.pending(a.ID)
	got, _ := h.sup.agentViews.Agent(context.Background(), a.ID)
	if got.Name != "haiku-writer" || got.Description != "writes haiku" || len(got.Directives.Constraints) != 1 {
		t.Fatalf("profile = %+v", got)
	}
	if p.Command != "finish" {
		t.Fatalf("proposal = %+v", p)
	}
	reqs := h.fake.Requests()
	if !strings.Contains(string(reqs[0].Format), "best_practices") {
		t.Error("profile request had no schema")
	}
	if !strings.Contains(joinContent(reqs[1].Messages), "stay short") {
		t.Error("generated constraint missing from the prompt")
	}
}

func TestDecisionErrors(t *testing.T) {
	h := newHarness(t)
	a, p := h.proposed(reply("list_folder", map[string]string{"path": "."}))
	ctx := context.Background()
	cases := []struct {
		name string
		ref  string
		req  api.DecideRequest
		want error
	}{
		{"unknown_agent", "ghost", api.DecideRequest{ProposalID: p.ID, Kind: "approve"}, api.ErrNotFound},
		{"unknown_proposal", a.ID, api.DecideRequest{ProposalID: "p-nope", Kind: "approve"}, api.ErrNotFound},
		{"no_proposal_id", a.ID, api.DecideRequest{Kind: "approve"}, api.ErrBadRequest},
		{"bad_kind", a.ID, api.DecideRequest{ProposalID: p.ID, Kind: "maybe"}, api.ErrBadRequest},
		{"empty_feedback", a.ID, api.DecideRequest{ProposalID: p.ID, Kind: "feedback"}, api.ErrBadRequest},
		{"negative_count", a.ID, api.DecideRequest{ProposalID: p.ID, Kind: "approve", Count: -2}, api.ErrBadRequest},
		{"spoofed_policy", a.ID, api.DecideRequest{ProposalID: p.ID, Kind: "approve", Source: "policy"}, api.ErrBadRequest},
		// A front end that sent "?" as feedback must not drop the proposal.
		{"help_mark_as_feedback", a.ID, api.DecideRequest{ProposalID: p.ID, Kind: "feedback", Feedback: "?"}, api.ErrBadRequest},
		{"help_word_as_feedback", a.ID, api.DecideRequest{ProposalID: p.ID, Kind: "feedback", Feedback: " Help "}, api.ErrBadRequest},
		{"help_letter_as_feedback", a.ID, api.DecideRequest{ProposalID: p.ID, Kind: "feedback", Feedback: "h"}, api.ErrBadRequest},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := h.sup.decisions.Decide(ctx, c.ref, c.req)
			if !errors.Is(err, c.want) {
				t.Fatalf("err = %v, want %v", err, c.want)
			}
			if strings.HasPrefix(c.name, "help_") && (!strings.Contains(err.Error(), "still waits") || !strings.Contains(err.Error(), "y -N")) {
				t.Errorf("the refusal does not say the proposal waits and what to answer: %v", err)
			}
		})
	}
	if got, err := h.sup.agentViews.Agent(ctx, a.ID); err != nil || got.Pending == nil || got.Pending.ID != p.ID {
		t.Fatalf("after refused help words the proposal no longer waits: %+v, %v", got, err)
	}
	// Superseded: stop the run, then decide on its proposal.
	if _, err := h.sup.runs.Stop(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	_, err := h.decide(a.ID, p, "y")
	if !errors.Is(err, api.ErrConflict) || !strings.Contains(err.Error(), "superseded") {
		t.Fatalf("decision on a superseded proposal: %v", err)
	}
}

func TestRacingApprovalsOneWins(t *testing.T) {
	h := newHarness(t)
	h.fake.Script(reply("test_side_effect", map[string]string{"what": "x"}))
	h.fake.SetDefault(func(*ollama.ChatRequest) string { return reply("ask_user", map[string]string{"question": "next?"}) })
	a := h.create(api.CreateAgentRequest{})
	p := h.pending(a.ID)
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok := 0
	for i := 0; i < 10; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := h.decide(a.ID, p, "y"); err == nil {
				mu.Lock()
				ok++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if ok != 1 {
		t.Fatalf("%d approvals accepted, want 1", ok)
	}
}

func TestPauseResume(t *testing.T) {
	h := newHarness(t)
	h.fake.SetDelay(200 * time.Millisecond)
	h.fake.SetDefault(func(*ollama.ChatRequest) string { return reply("list_folder", map[string]string{"path": "."}) })
	a := h.create(api.CreateAgentRequest{})
	h.waitFor(a.ID, "thinking", func(a *api.Agent) bool { return a.State == api.StateThinking })
	if _, err := h.sup.runs.Pause(context.Background(), a.ID); err != nil {
		t.Fatal(err)
	}
	// The cut model call ends meanwhile; it must not bring back a proposal.
	var got *api.Agent
	testutil.Hold(300*time.Millisecond, func() bool {
		got, _ = h.sup.agentViews.Agent(context.Background(), a.ID)
		return got.State == api.StatePaused && got.Pending == nil
	})
	if got.State != api.StatePaused || got.Pending != nil {
		t.Fatalf("paused agent = %+v", got)
	}
	h.fake.SetDelay(0)
	if _, err := h.sup.runs.Resume(context.Background(), a.ID); err != nil {
		t.Fatal(err)
	}
	h.pending(a.ID)
}

func TestDeleteRemovesAgent(t *testing.T) {
	h := newHarness(t)
	h.fake.Script(reply("list_folder", map[string]string{"path": "."}))
	a := h.create(api.CreateAgentRequest{})
	h.pending(a.ID)
	if err := h.sup.runs.DeleteAgent(context.Background(), a.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := h.sup.agentViews.Agent(context.Background(), a.ID); !errors.Is(err, api.ErrNotFound) {
		t.Fatalf("after delete: %v", err)
	}
	if _, err := os.Stat(a.Workspace); !os.IsNotExist(err) {
		t.Error("workspace left behind")
	}
}

func TestCreateValidation(t *testing.T) {
	h := newHarness(t)
	cases := []struct {
		name string
		req  api.CreateAgentRequest
	}{
		{"nothing", api.CreateAgentRequest{}},
		{"bad_name", api.CreateAgentRequest{Name: "Bad Name!", Goals: []string{"x"}}},
		{"six_goals", api.CreateAgentRequest{Name: "six", Goals: []string{"1", "2", "3", "4", "5", "6"}}},
		{"empty_goal", api.CreateAgentRequest{Name: "eg", Goals: []string{" "}}},
		{"bad_policy", api.CreateAgentRequest{Task: "x", Policy: &api.Policy{Mode: "yolo"}}},
		{"unknown_command", api.CreateAgentRequest{Name: "uc", Goals: []string{"x"}, Commands: []string{"read_file", "rm_rf"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := h.sup.runs.CreateAgent(context.Background(), c.req)
			if !errors.Is(err, api.ErrBadRequest) {
				t.Fatalf("err = %v, want bad request", err)
			}
		})
	}
	h.create(api.CreateAgentRequest{Name: "dup", Goals: []string{"x"}, Start: new(bool)})
	_, err := h.sup.runs.CreateAgent(context.Background(), api.CreateAgentRequest{Name: "dup", Goals: []string{"x"}})
	if !errors.Is(err, api.ErrConflict) {
		t.Fatalf("duplicate name err = %v", err)
	}
}

// An agent created with a command list is offered only those (and finish, ask_user), in
// its prompt's schema and when it executes, also after a restart: another command is an
// unknown one, told to the model, never run.
func TestCommandListLimitsAgent(t *testing.T) {
	h := newHarness(t)
	h.fake.Script(reply("write_file", map[string]string{"path": "x.txt", "contents": "no"}),
		reply("write_file", map[string]string{"path": "x.txt", "contents": "no"}))
	a := h.create(api.CreateAgentRequest{Name: "reader", Goals: []string{"read"}, Commands: []string{"read_file", "read_file"}, Start: new(bool)})
	if strings.Join(a.Commands, ",") != "read_file" {
		t.Fatalf("commands = %v", a.Commands)
	}
	h.stop()
	h.start()
	infos, err := h.sup.policyService.Commands(context.Background(), a.ID)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range infos {
		names = append(names, c.Name)
	}
	if strings.Join(names, ",") != "read_file,ask_user,finish" {
		t.Errorf("commands after a restart = %v", names)
	}
	if _, err := h.sup.runs.Task(context.Background(), a.ID, "write x.txt"); err != nil {
		t.Fatal(err)
	}
	h.waitFor(a.ID, "a strike", func(*api.Agent) bool { return len(h.fake.Requests()) >= 2 })
	reqs := h.fake.Requests()
	if strings.Contains(string(reqs[0].Format), "write_file") {
		t.Error("the reply schema offers write_file")
	}
	if last := reqs[1].Messages[len(reqs[1].Messages)-1].Content; !strings.Contains(last, `unknown command "write_file"`) {
		t.Errorf("the model was not told: %q", last)
	}
	testutil.Hold(50*time.Millisecond, func() bool { ps, _ := h.sup.agentViews.Proposals(context.Background(), a.ID); return len(ps) == 0 })
	if ps, _ := h.sup.agentViews.Proposals(context.Background(), a.ID); len(ps) != 0 {
		t.Errorf("proposals: %+v", ps)
	}
	if _, err := os.Stat(filepath.Join(a.Workspace, "x.txt")); !os.IsNotExist(err) {
		t.Errorf("x.txt was written: %v", err)
	}
}

// TestTempNameKeepsWorkingAfterRename: `agentctl run` prints the name an agent is
// created with, agent-XXXXXX; after the model names it, that name still finds it, for
// reads and for decisions, and a look-alike that was nobody's first name does not.
func TestTempNameKeepsWorkingAfterRename(t *testing.T) {
	h := newHarness(t)
	h.fake.Script(`{"name": "Haiku Writer", "description": "writes haiku", "best_practices": ["count syllables"], "constraints": ["stay short"]}`,
		reply("finish", map[string]string{"reason": "ok"}))
	a := h.create(api.CreateAgentRequest{Task: "write a haiku"})
	first := "agent-" + a.ID[2:8]
	if a.Name != first {
		t.Fatalf("created with name %q, want %q", a.Name, first)
	}
	p := h.pending(a.ID)
	ctx := context.Background()
	got, err := h.sup.agentViews.Agent(ctx, first)
	if err != nil || got.ID != a.ID || got.Name != "haiku-writer" {
		t.Fatalf("by first name %q after the rename: %+v, %v", first, got, err)
	}
	if _, err := h.sup.decisions.Decide(ctx, first, api.DecideRequest{ProposalID: p.ID, Kind: "deny"}); err != nil {
		t.Fatalf("deciding through the first name: %v", err)
	}
	for _, ref := range []string{"agent-ffffff", "agent-" + a.ID[2:7], "my" + first} {
		if _, err := h.sup.agentViews.Agent(ctx, ref); !errors.Is(err, api.ErrNotFound) {
			t.Errorf("%q found an agent (err %v), want not found", ref, err)
		}
	}
}
