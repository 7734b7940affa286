package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/cmd/agentctl/cli"
	"github.com/agentd/agentd/internal/testutil"
)

// session runs `agentctl follow` in the background with a pipe for stdin.
type session struct {
	stdin       *io.PipeWriter
	out, errOut *testutil.SyncBuffer
	done        chan int
}

func startFollow(t *testing.T, args ...string) *session {
	t.Helper()
	pr, pw := io.Pipe()
	s := &session{stdin: pw, out: &testutil.SyncBuffer{}, errOut: &testutil.SyncBuffer{}, done: make(chan int, 1)}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(func() { cancel(); pw.Close() })
	go func() { s.done <- cli.Run(ctx, args, pr, s.out, s.errOut) }()
	return s
}

func (s *session) typeLine(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(s.stdin, line+"\n"); err != nil {
		t.Fatal(err)
	}
}

// approvePrompt is what follow asks when a proposal waits for a decision.
const approvePrompt = "Approve? [y / y -N / y! / n / n! / feedback / ?]: "

// reply types line once stderr shows prompt the nth time.
func (s *session) reply(t *testing.T, prompt string, n int, line string) {
	t.Helper()
	waitOutput(t, s.errOut, prompt, n)
	s.typeLine(t, line)
}

// exitOK waits for follow to end and fails the test unless it exits 0.
func (s *session) exitOK(t *testing.T) {
	t.Helper()
	if code := s.exit(t); code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", code, s.errOut)
	}
}

func (s *session) exit(t *testing.T) int {
	t.Helper()
	select {
	case code := <-s.done:
		return code
	case <-time.After(20 * time.Second):
		t.Fatalf("follow did not end\nstdout:\n%s\nstderr:\n%s", s.out, s.errOut)
	}
	return -1
}

func walkerProposal(id string) *api.Proposal {
	return &api.Proposal{
		ID: id, AgentID: "a-4", Step: 1, Command: "list_files", Status: api.ProposalPending,
		Args: json.RawMessage(`{"path":"."}`),
		Thoughts: api.Thoughts{Observations: "The folder is new.", Text: "I know nothing yet.",
			Speak: "Let me look around.", Reasoning: "Listing comes first.", SelfCriticism: "Do not list twice.",
			Plan: "- list the files\n- sort by size"},
	}
}

func TestFollowDecidesAndAnswersFromStdin(t *testing.T) {
	t.Parallel()
	f := newFakeDaemon(t)
	f.events = func(w *eventWriter, r *http.Request, conn int) {
		w.send(api.Event{Seq: 1, Type: api.EventState, AgentID: "a-4",
			Agent: &api.Agent{ID: "a-4", Name: "walker", State: api.StateThinking}})
		w.send(api.Event{Seq: 2, Type: api.EventProposal, AgentID: "a-4", Proposal: walkerProposal("p-20")})
		d, ok := wait(t, w, f.decided)
		if !ok {
			return
		}
		w.send(api.Event{Seq: 3, Type: api.EventDecision, AgentID: "a-4", Decision: &api.Decision{
			ProposalID: d.ProposalID, Kind: d.Kind, Count: d.Count, By: d.By, Source: d.Source}})
		w.send(api.Event{Seq: 4, Type: api.EventResult, AgentID: "a-4", Episode: &api.Episode{
			Step: 1, ProposalID: "p-20", Command: "list_files", Args: json.RawMessage(`{"path":"."}`),
			Outcome: "succeeded", Result: "a.txt\nb.txt\n"}})
		w.send(api.Event{Seq: 5, Type: api.EventQuestion, AgentID: "a-4",
			Question: &api.Question{ProposalID: "p-21", Text: "Which colour?"}})
		if _, ok := wait(t, w, f.answered); !ok {
			return
		}
		w.send(api.Event{Seq: 6, Type: api.EventFinish, AgentID: "a-4", Message: "listed the files"})
	}

	s := startFollow(t, "--socket", f.sock, "follow", "walker")
	s.reply(t, approvePrompt, 1, "y -3")
	s.reply(t, "Answer: ", 1, "blue")
	s.exitOK(t)

	f.sent(t, api.DecideRequest{ProposalID: "p-20", Kind: api.DecisionApprove, Count: 3, By: "tester", Source: "agentctl"},
		api.AnswerRequest{ProposalID: "p-21", Text: "blue", By: "tester"})
	wantOut := `following walker (a-4)
task: list the largest files
state: thinking
09:30:00 proposal (step 1):
  says: Let me look around.
  observations: The folder is new.
  thinking: I know nothing yet.
  reasoning: Listing comes first.
  self-criticism: Do not list twice.
  plan:
    - list the files
    - sort by size
  → list_files(path=".")
09:30:00 decision: approved (and the next 2) by tester via agentctl
09:30:00 result: succeeded list_files(path=".")
  a.txt
  b.txt
09:30:00 ? Which colour?
09:30:00 finished: listed the files
`
	if got := s.out.String(); got != wantOut {
		t.Errorf("stdout:\n%s\nwant:\n%s", got, wantOut)
	}
	if strings.Contains(s.errOut.String()+s.out.String(), "\x1b") {
		t.Errorf("escape codes written without a terminal:\n%q", s.errOut)
	}
}

// TestFollowShowsAProposalMadeBeforeItSubscribed: the agent proposes after follow first
// read it and before its event stream subscribed, which replays nothing from since 0.
// Follow reads the agent again once subscribed and asks for a decision, instead of
// showing "thinking" while the agent waits on a person.
func TestFollowShowsAProposalMadeBeforeItSubscribed(t *testing.T) {
	t.Parallel()
	f := newFakeDaemonWith(t, &api.Agent{ID: "a-7", Name: "racer", State: api.StateThinking, Task: "look around"})
	f.set(func() {
		f.subscribing = func() {
			f.mu.Lock()
			defer f.mu.Unlock()
			a := f.agents[len(f.agents)-1]
			a.State, a.Pending = api.StateAwaitingDecision, walkerProposal("p-70")
		}
	})
	s := startFollow(t, "--socket", f.sock, "follow", "racer")
	s.reply(t, approvePrompt, 1, "y")
	select {
	case d := <-f.decided:
		if d.ProposalID != "p-70" || d.Kind != api.DecisionApprove {
			t.Errorf("decided %+v, want an approval of p-70", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("no decision reached the daemon\nstdout:\n%s\nstderr:\n%s", s.out, s.errOut)
	}
	if got := s.out.String(); !strings.Contains(got, "state: thinking\n") || !strings.Contains(got, "→ list_files(path=\".\")") {
		t.Errorf("stdout does not show the thinking agent and then its proposal:\n%s", got)
	}
}

func TestFollowReconnectsAndNotesARefusedDecision(t *testing.T) {
	t.Parallel()
	f := newFakeDaemon(t)
	f.decide = func(_ *api.Agent, req api.DecideRequest) (*api.Decision, error) {
		return nil, api.Errorf(api.ErrConflict, "proposal %s was superseded: the run moved on", req.ProposalID)
	}
	f.events = func(w *eventWriter, r *http.Request, conn int) {
		switch conn {
		case 1:
			w.send(api.Event{Seq: 41, Type: api.EventProposal, AgentID: "a-4", Proposal: walkerProposal("p-30")})
			wait(t, w, f.decided)
			// return: the stream drops
		case 2:
			w.send(api.Event{Seq: 42, Type: api.EventFinish, AgentID: "a-4", Message: "done"})
		}
	}

	s := startFollow(t, "--socket", f.sock, "follow", "a-4")
	s.reply(t, "Approve?", 1, "y")
	s.exitOK(t)
	stderr := s.errOut.String()
	for _, want := range []string{
		"note: proposal p-30 was superseded: the run moved on",
		"lost the event stream: the daemon closed it; reconnecting…",
		"reconnected",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if want := []int64{0, 41}; !slices.Equal(f.sinces, want) {
		t.Errorf("events requested since %v, want %v", f.sinces, want)
	}
}

func TestFollowJSONPrintsEventsAndReadsNoInput(t *testing.T) {
	t.Parallel()
	f := newFakeDaemon(t)
	sent := []api.Event{
		{Seq: 7, Type: api.EventProposal, AgentID: "a-4", Proposal: walkerProposal("p-40")},
		{Seq: 8, Type: api.EventError, AgentID: "a-4", Message: "model is slow"},
		{Seq: 9, Type: api.EventFinish, AgentID: "a-4", Message: "done"},
	}
	f.events = func(w *eventWriter, r *http.Request, conn int) {
		for _, ev := range sent {
			w.send(ev)
		}
	}
	r := runCLI(t, "", "--socket", f.sock, "follow", "walker", "--json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != len(sent) {
		t.Fatalf("got %d lines, want %d:\n%s", len(lines), len(sent), r.stdout)
	}
	for i, l := range lines {
		var ev api.Event
		if err := json.Unmarshal([]byte(l), &ev); err != nil || ev.Seq != sent[i].Seq || ev.Type != sent[i].Type {
			t.Errorf("line %d = %s (%v), want event seq %d", i, l, err, sent[i].Seq)
		}
	}
	// The note races the end of the stream (stdin is empty from the start): at most once.
	if n := strings.Count(r.stderr, "input closed"); n > 1 {
		t.Errorf("stderr has the input-closed note %d times, want at most once:\n%s", n, r.stderr)
	}
}

func TestFollowEndsWhenTheAgentFails(t *testing.T) {
	t.Parallel()
	f := newFakeDaemon(t)
	f.events = func(w *eventWriter, r *http.Request, conn int) {
		w.send(api.Event{Seq: 1, Type: api.EventState, AgentID: "a-4", Agent: &api.Agent{
			ID: "a-4", Name: "walker", State: api.StateFailed, StateReason: "workspace is read-only"}})
		<-r.Context().Done()
	}
	r := runCLI(t, "", "--socket", f.sock, "follow", "walker")
	if r.code != 1 || !strings.Contains(r.stderr, "agentctl: agent walker failed: workspace is read-only") {
		t.Errorf("got %v, want exit 1 naming the failure", r)
	}
	if !strings.Contains(r.stdout, "state: failed: workspace is read-only") {
		t.Errorf("stdout lacks the state change:\n%s", r.stdout)
	}
}

func TestRunFollowFollowsTheNewAgent(t *testing.T) {
	t.Parallel()
	f := newFakeDaemonWith(t, &api.Agent{ID: "a-9", Name: "new-agent", State: api.StateThinking, Task: "count files"})
	f.set(func() {
		f.events = func(w *eventWriter, r *http.Request, conn int) {
			if id := r.PathValue("ref"); id != "a-9" {
				t.Errorf("followed %q, want the new agent a-9", id)
			}
			w.send(api.Event{Seq: 1, Type: api.EventFinish, AgentID: "a-9", Message: "42 files"})
		}
	})
	r := runCLI(t, "", "--socket", f.sock, "run", "count files", "--follow")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "a-9 new-agent\n") || !strings.Contains(r.stdout, "finished: 42 files") {
		t.Errorf("got %v", r)
	}
}

func TestStatusSaysHowToFixOllama(t *testing.T) {
	t.Parallel()
	f := newFakeDaemon(t)
	f.set(func() { f.status.Ollama.Reachable, f.status.Ollama.Error = false, "connection refused" })
	r := runCLI(t, "", "--socket", f.sock, "status")
	if r.code != 0 || !strings.Contains(r.stdout, "unreachable: connection refused") || !strings.Contains(r.stdout, "`ollama serve`") {
		t.Errorf("unreachable: got %v", r)
	}
	f.set(func() { f.status.Ollama.Reachable, f.status.Ollama.ModelPresent = true, false })
	r = runCLI(t, "", "--socket", f.sock, "status")
	if !strings.Contains(r.stdout, "model not found: run `ollama pull qwen3:4b`") {
		t.Errorf("model missing: got %v", r)
	}
}

func TestStatusShowsTheSandbox(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		shell api.ShellStatus
		want  []string
	}{
		{"off", api.ShellStatus{}, []string{"shell:         off\n"}},
		{"refused", api.ShellStatus{Enabled: true, Sandbox: "refused: no sandbox works here (bwrap is not installed)"},
			[]string{"shell:         refused: no sandbox works here (bwrap is not installed)\n", "not sandboxed: `agentctl doctor` says how to fix it"}},
		{"unconfined", api.ShellStatus{Enabled: true, Sandbox: `unconfined ([shell] sandbox = "none")`},
			[]string{"unconfined", "not sandboxed"}},
		{"limits_per_agent", api.ShellStatus{Enabled: true, Confined: true, Sandbox: "bubblewrap", LimitsPerAgent: true,
			Limits: "a cgroup v2 per agent: at most 256 processes"}, []string{"limits:        a cgroup v2 per agent: at most 256 processes\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeDaemon(t)
			f.set(func() { f.status.Shell = tt.shell })
			r := runCLI(t, "", "--socket", f.sock, "status")
			for _, w := range tt.want {
				if r.code != 0 || !strings.Contains(r.stdout, w) {
					t.Errorf("got %v; want %q in it", r, w)
				}
			}
		})
	}
}

// TestFollowSaysHowToRaiseABudget: an agent paused by its own budget is not resumed by
// agentctl resume; follow names the budget and the flag that raises it instead.
func TestFollowSaysHowToRaiseABudget(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		exhausted *api.BudgetExhausted
		want      string
	}{
		{"agent_tokens", &api.BudgetExhausted{Scope: api.BudgetScopeAgent, Kind: "tokens", Budget: api.Budget{MaxTokens: 5000}},
			"(over its token budget: raise it with agentctl budget walker --max-tokens N, and it goes on)"},
		{"agent_time", &api.BudgetExhausted{Scope: api.BudgetScopeAgent, Kind: "time", Budget: api.Budget{MaxTime: "1h0m0s"}},
			"(over its time budget: raise it with agentctl budget walker --max-time D, and it goes on)"},
		{"paused_by_a_person", nil, "(resume it with: agentctl resume walker)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeDaemon(t)
			f.events = func(w *eventWriter, r *http.Request, conn int) {
				w.send(api.Event{Seq: 1, Type: api.EventState, AgentID: "a-4", Exhausted: tt.exhausted, Agent: &api.Agent{
					ID: "a-4", Name: "walker", State: api.StatePaused, StateReason: "agent budget exhausted: it used 5012 model tokens"}})
				w.send(api.Event{Seq: 2, Type: api.EventFinish, AgentID: "a-4", Message: "stopped by a person"})
			}
			r := runCLI(t, "", "--socket", f.sock, "follow", "walker")
			if r.code != 0 || !strings.Contains(r.stderr, tt.want) {
				t.Fatalf("got %v, want stderr saying %q", r, tt.want)
			}
			if tt.exhausted != nil && strings.Contains(r.stderr, "agentctl resume") {
				t.Errorf("follow suggests resume, which refuses an agent over its budget:\n%s", r.stderr)
			}
		})
	}
}

// TestFollowShowsTheWatchdogsPause: an agent the watchdog paused shows the proposal it
// stopped at and the loop's kind and steps, and says how to go on.
func TestFollowShowsTheWatchdogsPause(t *testing.T) {
	t.Parallel()
	const reason = "the watchdog caught a loop (cycle): a cycle of 2 steps seen twice (steps 3-6: list_folder ., read_file notes.txt); " +
		"the 14 approvals left of its y -N grant are cancelled. Decide on step 6 (approve runs it once more, feedback steers the agent), then resume: `agentctl resume walker`"
	f := newFakeDaemon(t)
	f.events = func(w *eventWriter, r *http.Request, conn int) {
		p := &api.Proposal{ID: "p-6", AgentID: "a-4", Step: 6, Command: "read_file", Args: []byte(`{"path":"notes.txt"}`), Status: api.ProposalPending}
		ag := &api.Agent{ID: "a-4", Name: "walker", State: api.StatePaused, StateReason: reason, Pending: p}
		w.send(api.Event{Seq: 1, Type: api.EventProposal, AgentID: "a-4", Proposal: p, Agent: ag})
		w.send(api.Event{Seq: 2, Type: api.EventState, AgentID: "a-4", Agent: ag})
		w.send(api.Event{Seq: 3, Type: api.EventFinish, AgentID: "a-4", Message: "stopped by a person"})
	}
	r := runCLI(t, "", "--socket", f.sock, "follow", "walker")
	for _, want := range []string{"read_file", "notes.txt", "paused: the watchdog caught a loop (cycle)", "steps 3-6: list_folder ., read_file notes.txt", "agentctl resume walker"} {
		if !strings.Contains(r.stdout+r.stderr, want) {
			t.Errorf("follow output lacks %q:\n%s%s", want, r.stdout, r.stderr)
		}
	}
}

// TestFollowHelpLeavesTheProposalWaiting: "?", "help" and "h" show what each answer does
// and decide nothing; at a question a lone "?" shows how to answer, and "help" would be
// the answer.
func TestFollowHelpLeavesTheProposalWaiting(t *testing.T) {
	t.Parallel()
	f := newFakeDaemon(t)
	f.events = func(w *eventWriter, r *http.Request, conn int) {
		w.send(api.Event{Seq: 1, Type: api.EventProposal, AgentID: "a-4", Proposal: walkerProposal("p-20")})
		d, ok := wait(t, w, f.decided)
		if !ok {
			return
		}
		w.send(api.Event{Seq: 2, Type: api.EventDecision, AgentID: "a-4", Decision: &api.Decision{
			ProposalID: d.ProposalID, Kind: d.Kind, Count: d.Count, By: d.By, Source: d.Source}})
		w.send(api.Event{Seq: 3, Type: api.EventQuestion, AgentID: "a-4",
			Question: &api.Question{ProposalID: "p-21", Text: "Which colour?"}})
		if _, ok := wait(t, w, f.answered); !ok {
			return
		}
		w.send(api.Event{Seq: 4, Type: api.EventFinish, AgentID: "a-4", Message: "done"})
	}

	s := startFollow(t, "--socket", f.sock, "follow", "walker")
	const prompt = approvePrompt
	waitOutput(t, s.errOut, prompt, 1)
	for i, word := range []string{"?", " HELP ", "h"} {
		s.typeLine(t, word)
		waitOutput(t, s.errOut, "y -N     run it and the next N-1 proposals of this run without asking", i+1)
		waitOutput(t, s.errOut, prompt, i+2) // asked again: the proposal still waits
	}
	if got := s.errOut.String(); !strings.Contains(got, "the proposal still waits") || !strings.Contains(got, "n!       like n") {
		t.Errorf("the help does not say the proposal waits, or misses an answer:\n%s", got)
	}
	// The short legend before the first prompt explains y! and n!, once however often the
	// prompt comes back.
	if n := strings.Count(s.errOut.String(), "y! runs it and from now on this exact command unasked"); n != 1 {
		t.Errorf("the decision legend shows %d times, want once before the first prompt:\n%s", n, s.errOut)
	}
	f.mu.Lock()
	sent := len(f.decisions)
	f.mu.Unlock()
	if sent != 0 {
		t.Fatalf("help words were sent as %d decisions: %+v", sent, f.decisions)
	}
	s.typeLine(t, "y")
	s.reply(t, "Answer: ", 1, "?")
	waitOutput(t, s.errOut, "what you send is its answer", 1)
	s.reply(t, "Answer: ", 2, "help")
	s.exitOK(t)
	// At a question the word help is an answer.
	f.sent(t, api.DecideRequest{ProposalID: "p-20", Kind: api.DecisionApprove, Count: 1, By: "tester", Source: "agentctl"},
		api.AnswerRequest{ProposalID: "p-21", Text: "help", By: "tester"})
}

// TestFollowShowsTheGoalsOfACreatedAgent: an agent made with create works on its goals;
// follow, ls and show show them, not the stand-in task the daemon gives its run.
func TestFollowShowsTheGoalsOfACreatedAgent(t *testing.T) {
	t.Parallel()
	f := newFakeDaemon(t)
	no := false
	created, err := f.create(context.Background(), "", api.CreateAgentRequest{Name: "scribe2", Description: "a note taker",
		Goals: []string{"keep notes.md up to date", "never delete\na note"}, Start: &no})
	if err != nil {
		t.Fatal(err)
	}
	if created.Task != api.GoalsTask {
		t.Fatalf("the fake gives a created agent the task %q; the daemon gives %q", created.Task, api.GoalsTask)
	}
	created.State, created.RunID = api.StateThinking, "r-9"
	f.set(func() { f.agents = append(f.agents, created) })
	f.events = func(w *eventWriter, r *http.Request, conn int) {
		w.send(api.Event{Seq: 1, Type: api.EventFinish, AgentID: created.ID, Message: "notes are tidy"})
	}
	r := runCLI(t, "", "--socket", f.sock, "follow", "scribe2")
	// stdout only: whether the empty stdin's "input closed" note comes before the finish
	// event ends the follow is a race, and not what this test is about.
	testutil.Golden(t, "testdata/goals/follow.golden", []byte(fmt.Sprintf("$ agentctl follow scribe2\n[exit %d]\n--- stdout\n%s", r.code, r.stdout)))
	r = runCLI(t, "", "--socket", f.sock, "ls")
	testutil.Golden(t, "testdata/goals/ls.golden", []byte("$ agentctl ls\n"+r.String()))
	r = runCLI(t, "", "--socket", f.sock, "show", "scribe2")
	testutil.Golden(t, "testdata/goals/show.golden", []byte("$ agentctl show scribe2\n"+r.String()))
}
