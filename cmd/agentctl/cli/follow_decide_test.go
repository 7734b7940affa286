package cli_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/internal/testutil"
)

// TestFollowPrintsTheDecisionBeforeExecuting: a proposal a rule approves arrives with
// the agent already executing; follow prints its decision line first, then "executing"
// (the order the daemon publishes: proposal, decision, state).
func TestFollowPrintsTheDecisionBeforeExecuting(t *testing.T) {
	t.Parallel()
	f := newFakeDaemon(t)
	f.events = func(w *eventWriter, r *http.Request, conn int) {
		p := walkerProposal("p-20")
		executing := &api.Agent{ID: "a-4", Name: "walker", State: api.StateExecuting}
		w.send(api.Event{Seq: 1, Type: api.EventProposal, AgentID: "a-4", Proposal: p, Agent: executing})
		w.send(api.Event{Seq: 2, Type: api.EventDecision, AgentID: "a-4", Decision: &api.Decision{
			ProposalID: "p-20", Kind: api.DecisionApprove, Count: 1, Source: "policy", By: "list_files(*)", Pattern: "list_files(*)"}})
		w.send(api.Event{Seq: 3, Type: api.EventState, AgentID: "a-4", Agent: executing})
		w.send(api.Event{Seq: 4, Type: api.EventResult, AgentID: "a-4", Episode: &api.Episode{
			Step: 1, ProposalID: "p-20", Command: "list_files", Args: json.RawMessage(`{"path":"."}`), Outcome: "succeeded", Result: "a.txt"}})
		w.send(api.Event{Seq: 5, Type: api.EventFinish, AgentID: "a-4", Message: "listed"})
	}
	r := runCLI(t, "", "--socket", f.sock, "follow", "walker")
	testutil.Golden(t, "testdata/follow/decision_before_executing.golden", stdoutOf(r))
	d, e := strings.Index(r.stdout, "decision: approved by policy"), strings.Index(r.stdout, "state: executing")
	if d < 0 || e < 0 || d > e {
		t.Errorf("want the decision line before \"executing\":\n%s", r.stdout)
	}
}

// TestFollowConfirmsWhatADecisionStored: y! names the grant it stored and how to revoke
// it, y -N how many run unasked and of how many, n! the deny pattern and how to remove it;
// a chat decider is named by display name.
func TestFollowConfirmsWhatADecisionStored(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		decision api.Decision
	}{
		{"y_bang", api.Decision{Kind: api.DecisionApprove, Count: 1, Scope: api.ScopeAgent, Grant: "g-7", GrantLabel: "tester's y! on this exact list_files"}},
		{"y_5", api.Decision{Kind: api.DecisionApprove, Count: 5, Grant: "g-8", GrantLabel: "tester's y -5", GrantCount: 4, GrantLeft: 4}},
		{"n_bang", api.Decision{Kind: api.DecisionDeny, Scope: api.ScopeDeny, Pattern: "list_files(.)"}},
		{"y_once", api.Decision{Kind: api.DecisionApprove, Count: 1}},
		// A chat decider shows by display name, not by the id chat knows them by.
		// A grant's use counts down out of the person's N: theirs was the first.
		{"grant_use", api.Decision{Kind: api.DecisionApprove, Count: 1, Source: "grant", By: "tester", Grant: "g-8", GrantLabel: "tester's y -5", GrantCount: 4, GrantLeft: 3}},
		{"slack_user_by_name", api.Decision{Kind: api.DecisionApprove, Count: 1, By: "U04ABC", ByName: "Ana Lima", Source: "slack"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFakeDaemon(t)
			f.events = func(w *eventWriter, r *http.Request, conn int) {
				w.send(api.Event{Seq: 1, Type: api.EventProposal, AgentID: "a-4", Proposal: walkerProposal("p-20")})
				d := tt.decision
				d.ProposalID = "p-20"
				if d.By == "" {
					d.By, d.Source = "tester", "agentctl"
				}
				w.send(api.Event{Seq: 2, Type: api.EventDecision, AgentID: "a-4", Decision: &d})
				w.send(api.Event{Seq: 3, Type: api.EventFinish, AgentID: "a-4", Message: "done"})
			}
			r := runCLI(t, "", "--socket", f.sock, "follow", "walker")
			testutil.Golden(t, "testdata/follow/stored_"+tt.name+".golden", stdoutOf(r))
		})
	}
}

// TestFollowPromptsOnceForAQuestion: the daemon publishes an answer's result and state
// before it replies to the answer; follow must not ask "Answer:" again meanwhile.
func TestFollowPromptsOnceForAQuestion(t *testing.T) {
	t.Parallel()
	f := newFakeDaemon(t)
	f.answerGate = make(chan struct{})
	resultShown := make(chan struct{})
	f.events = func(w *eventWriter, r *http.Request, conn int) {
		w.send(api.Event{Seq: 1, Type: api.EventQuestion, AgentID: "a-4", Question: &api.Question{ProposalID: "p-21", Text: "Which colour?"}})
		if _, ok := wait(t, w, f.answered); !ok {
			return
		}
		w.send(api.Event{Seq: 2, Type: api.EventResult, AgentID: "a-4", Episode: &api.Episode{
			Step: 2, ProposalID: "p-21", Command: "ask_user", Outcome: "succeeded", Result: "blue"}})
		w.send(api.Event{Seq: 3, Type: api.EventState, AgentID: "a-4", Agent: &api.Agent{ID: "a-4", Name: "walker", State: api.StateThinking}})
		<-resultShown
		close(f.answerGate)
		w.send(api.Event{Seq: 4, Type: api.EventFinish, AgentID: "a-4", Message: "done"})
	}
	s := startFollow(t, "--socket", f.sock, "follow", "walker")
	s.reply(t, "Answer: ", 1, "blue")
	waitOutput(t, s.out, "state: thinking", 1)
	close(resultShown)
	s.exitOK(t)
	if n := strings.Count(s.errOut.String(), "Answer: "); n != 1 {
		t.Errorf("%d Answer: prompts for one question, want 1:\n%s", n, s.errOut)
	}
}

// TestFollowUsesPipedLines: `echo n | agentctl run --follow` once hung: the n arrived
// before the proposal and was dropped. Piped lines now wait for what they decide, and
// follow ends when they run out while the agent waits for one more.
func TestFollowUsesPipedLines(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, stdin string
		want        []api.DecisionKind
		note        string // in the output
	}{
		// Most often the n is read before the proposal comes ("(from input: n)"), but
		// either order must deny it and end.
		{"n_ends_the_run", "n\n", []api.DecisionKind{api.DecisionDeny}, "finished: denied by tester via agentctl"},
		{"eof_while_waiting", "y\n", []api.DecisionKind{api.DecisionApprove},
			"(input closed while agent walker waits for a decision on its proposal; it keeps waiting: decide with agentctl approve|deny|feedback walker)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFakeDaemon(t)
			f.events = func(w *eventWriter, r *http.Request, conn int) {
				w.send(api.Event{Seq: 1, Type: api.EventState, AgentID: "a-4", Agent: &api.Agent{ID: "a-4", Name: "walker", State: api.StateThinking}})
				// The piped line is most often read before this proposal exists.
				w.send(api.Event{Seq: 2, Type: api.EventProposal, AgentID: "a-4", Proposal: walkerProposal("p-20")})
				d, ok := wait(t, w, f.decided)
				if !ok {
					return
				}
				w.send(api.Event{Seq: 3, Type: api.EventDecision, AgentID: "a-4", Decision: &api.Decision{ProposalID: "p-20", Kind: d.Kind, Count: d.Count, By: d.By, Source: d.Source}})
				if d.Kind == api.DecisionDeny {
					w.send(api.Event{Seq: 4, Type: api.EventFinish, AgentID: "a-4", Message: "denied by tester via agentctl"})
					return
				}
				p := walkerProposal("p-22")
				p.Step = 2
				w.send(api.Event{Seq: 4, Type: api.EventProposal, AgentID: "a-4", Proposal: p})
				<-r.Context().Done() // the agent waits; only follow can end this
			}
			r := runCLI(t, tt.stdin, "--socket", f.sock, "follow", "walker")
			if r.code != 0 || !strings.Contains(r.stderr+r.stdout, tt.note) {
				t.Fatalf("got %v; want exit 0 and %q", r, tt.note)
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			var got []api.DecisionKind
			for _, d := range f.decisions {
				got = append(got, d.Kind)
			}
			if len(got) != len(tt.want) || got[0] != tt.want[0] {
				t.Errorf("decisions %v, want %v", got, tt.want)
			}
		})
	}
}

// TestRunFollowEndsWhenTheRunIsAlreadyOver: a run that finishes before follow looks
// (the model proposed finish at once) ends `agentctl run --follow`, which once waited
// for events that had already gone by.
func TestRunFollowEndsWhenTheRunIsAlreadyOver(t *testing.T) {
	t.Parallel()
	// No f.events: the stream stays open and silent, as the daemon's after a run ended.
	f := newFakeDaemonWith(t, &api.Agent{ID: "a-9", Name: "new-agent", State: api.StateIdle,
		StateReason: "finished: nothing to do", Task: "count files", RunID: "r-9"})
	r := runCLI(t, "", "--socket", f.sock, "run", "count files", "--follow")
	if r.code != 0 || !strings.Contains(r.stdout, "finished: nothing to do\n") {
		t.Fatalf("got %v; want exit 0 and the run's end", r)
	}
}

// TestFollowSubscribesFromBeforeItsSnapshot: follow asks for the events after the seq the
// daemon reported before follow read the agent, so what happens between the two is
// replayed, not lost.
func TestFollowSubscribesFromBeforeItsSnapshot(t *testing.T) {
	t.Parallel()
	f := newFakeDaemon(t)
	f.set(func() { f.status.EventSeq = 77 })
	f.events = func(w *eventWriter, r *http.Request, conn int) {
		w.send(api.Event{Seq: 78, Type: api.EventFinish, AgentID: "a-4", Message: "done"})
	}
	r := runCLI(t, "", "--socket", f.sock, "follow", "walker")
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.code != 0 || len(f.sinces) != 1 || f.sinces[0] != 77 {
		t.Errorf("got %v, events since %v; want one subscription since 77", r, f.sinces)
	}
}

// stdoutOf is a follow's exit code and stdout as a golden file holds them. Its stderr is
// left out: whether stdin's end (the "input closed" note) or the stream's comes first
// is a race these tests do not judge.
func stdoutOf(r result) []byte {
	return []byte(fmt.Sprintf("$ agentctl follow walker\n[exit %d]\n--- stdout\n%s", r.code, r.stdout))
}

// TestFollowWithdrawsAPromptSettledElsewhere: a question answered, or a proposal decided,
// in another terminal (or a chat thread, or the web console) closes this follow's open
// prompt saying so, instead of leaving "Answer:" waiting on the screen for nothing.
func TestFollowWithdrawsAPromptSettledElsewhere(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, prompt, want string
		settle             func(w *eventWriter)
		ask                api.Event
	}{
		{"answered_elsewhere", "Answer: ", "Answer: (answered elsewhere)\n", func(w *eventWriter) {
			w.send(api.Event{Seq: 2, Type: api.EventState, AgentID: "a-4", Agent: &api.Agent{ID: "a-4", Name: "walker", State: api.StateThinking}})
			w.send(api.Event{Seq: 3, Type: api.EventResult, AgentID: "a-4", Episode: &api.Episode{
				Step: 2, ProposalID: "p-21", Command: "ask_user", Outcome: "succeeded", Result: "blue"}})
		}, api.Event{Seq: 1, Type: api.EventQuestion, AgentID: "a-4", Question: &api.Question{ProposalID: "p-21", Text: "Which colour?"}}},
		{"decided_elsewhere", "Approve? ", "]: (decided elsewhere)\n", func(w *eventWriter) {
			w.send(api.Event{Seq: 2, Type: api.EventDecision, AgentID: "a-4", Decision: &api.Decision{
				ProposalID: "p-20", Kind: api.DecisionApprove, Count: 1, By: "ann", Source: "slack"}})
		}, api.Event{Seq: 1, Type: api.EventProposal, AgentID: "a-4", Proposal: walkerProposal("p-20")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFakeDaemon(t)
			prompted := make(chan struct{})
			f.events = func(w *eventWriter, r *http.Request, conn int) {
				w.send(tt.ask)
				if _, ok := wait(t, w, prompted); !ok {
					return
				}
				tt.settle(w)
				w.send(api.Event{Seq: 9, Type: api.EventFinish, AgentID: "a-4", Message: "done"})
			}
			s := startFollow(t, "--socket", f.sock, "follow", "walker")
			waitOutput(t, s.errOut, tt.prompt, 1)
			close(prompted)
			s.exitOK(t)
			if !strings.Contains(s.errOut.String(), tt.want) {
				t.Errorf("the prompt was not closed with %q:\n%s", tt.want, s.errOut)
			}
		})
	}
}

// TestFollowAsksAgainForAProposalWhosePreviewRanAgain: a proposal approved from follow is
// asked again with its preview run again (the workspace changed): follow shows it again
// and asks, and each decision names the proposal as it was shown then (its Ref), so the
// daemon refuses one made from a preview since run again.
func TestFollowAsksAgainForAProposalWhosePreviewRanAgain(t *testing.T) {
	t.Parallel()
	first := walkerProposal("p-20")
	first.Hash = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	first.Preview = &api.Preview{Kind: api.PreviewProgram, Effect: &api.Effect{Summary: "changes 1 file (+1 −0)", From: 1, To: 2, ToRoot: "first-root"}}
	again := *first
	again.Status = api.ProposalInterrupted
	again.Preview = &api.Preview{Kind: api.PreviewProgram, Effect: &api.Effect{Summary: "changes 1 file (+1 −1)", From: 3, To: 4, ToRoot: "second-root"}}
	f := newFakeDaemon(t)
	f.events = func(w *eventWriter, r *http.Request, conn int) {
		w.send(api.Event{Seq: 1, Type: api.EventState, AgentID: "a-4", Agent: &api.Agent{ID: "a-4", Name: "walker", State: api.StateThinking}})
		w.send(api.Event{Seq: 2, Type: api.EventProposal, AgentID: "a-4", Proposal: first})
		d, ok := wait(t, w, f.decided)
		if !ok {
			return
		}
		w.send(api.Event{Seq: 3, Type: api.EventDecision, AgentID: "a-4", Decision: &api.Decision{ProposalID: d.ProposalID, Kind: d.Kind, Count: 1, By: d.By, Source: d.Source}})
		w.send(api.Event{Seq: 4, Type: api.EventResult, AgentID: "a-4", Episode: &api.Episode{Step: 1, ProposalID: "p-20", Command: "list_files", Outcome: "interrupted", Result: "Not applied: the workspace changed since the preview"}})
		w.send(api.Event{Seq: 5, Type: api.EventProposal, AgentID: "a-4", Proposal: &again,
			Agent: &api.Agent{ID: "a-4", Name: "walker", State: api.StateAwaitingDecision, Pending: &again}})
		if _, ok := wait(t, w, f.decided); !ok {
			return
		}
		w.send(api.Event{Seq: 6, Type: api.EventFinish, AgentID: "a-4", Message: "done"})
	}
	s := startFollow(t, "--socket", f.sock, "follow", "walker")
	s.reply(t, approvePrompt, 1, "y")
	waitOutput(t, s.out, "changes 1 file (+1 −1)", 1)
	s.reply(t, approvePrompt, 2, "y")
	s.exitOK(t)
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.decisions) != 2 || f.decisions[0].Hash != first.Ref() || f.decisions[1].Hash != again.Ref() || first.Ref() == again.Ref() {
		t.Errorf("decisions %+v: want the first naming ref %s, the second %s", f.decisions, first.Ref(), again.Ref())
	}
}
