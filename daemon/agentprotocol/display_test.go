package agentprotocol

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/internal/display/displaytest"
)

// Everything a reply shows a person goes through the one escaping: a step's output (the
// model's words, its command and args, a result, the run's end), its name and input, an
// artifact's name and folder, a task's input and reasons, an error. No hostile string —
// an escape sequence, a bidi override, a zero-width character, a line break forging a
// line of the daemon's — acts; additional_output keeps the data as it is.
func TestRepliesShowHostileTextEscaped(t *testing.T) {
	h := New(Options{}).(*handler)
	for _, c := range displaytest.Cases {
		t.Run(c.Name, func(t *testing.T) {
			args, _ := json.Marshal(map[string]string{"path": "notes.txt", "contents": c.Text})
			thoughts := api.Thoughts{Speak: c.Text}
			rp := &api.Replay{Run: api.Run{ID: "r-1", Task: c.Text, Outcome: "finished", Reason: c.Text}, Steps: []api.ReplayStep{
				{Proposal: api.Proposal{ID: "p-1", Command: "write_file", Args: args, Thoughts: thoughts, Status: api.ProposalSucceeded, Result: c.Text}},
				{Proposal: api.Proposal{ID: "p-2", Command: "tool" + c.Text, Args: args, Thoughts: thoughts, Status: api.ProposalFeedback},
					Decisions: []api.Decision{{Kind: api.DecisionFeedback, Feedback: c.Text}}},
				{Proposal: api.Proposal{ID: "p-3", Command: "ask_user", Args: args, Thoughts: thoughts, Status: api.ProposalSucceeded, Result: c.Text}},
				{Proposal: api.Proposal{ID: "p-4", Command: "write_file", Args: args, Thoughts: thoughts, Status: api.ProposalPending}},
			}}
			m := &stepMapper{h: h, rp: rp, writers: map[string]bool{}}
			for i := range rp.Steps {
				s := m.step(i)
				for what, v := range map[string]string{"output": s.Output, "name": s.Name, "input": s.Input} {
					if leak := displaytest.Leak(v); leak != "" {
						t.Errorf("step %d's %s shows %s:\n%s", i+1, what, leak, v)
					}
				}
				if i == 0 && s.AdditionalOutput["result"] != c.Text {
					t.Errorf("additional_output's result %q, want the data as it is", s.AdditionalOutput["result"])
				}
			}
			a := h.artifactOf("dir"+c.Text+"/name"+c.Text, nil)
			for what, v := range map[string]string{"file_name": a.FileName, "relative_path": a.RelativePath} {
				if leak := displaytest.Leak(v); leak != "" {
					t.Errorf("an artifact's %s shows %s: %q", what, leak, v)
				}
			}
			if got, _ := artifactPath(a.ArtifactID); got != "dir"+c.Text+"/name"+c.Text {
				t.Errorf("the artifact's id names %q, want the file itself", got)
			}
			info := agentInfo(&api.Agent{Name: "a", State: api.StatePaused, StateReason: c.Text, RunID: "r-1"}, &rp.Run)
			for _, k := range []string{"state_reason", "reason"} {
				if leak := displaytest.Leak(info[k].(string)); leak != "" {
					t.Errorf("a task's %s shows %s: %q", k, leak, info[k])
				}
			}
			w := httptest.NewRecorder()
			h.writeError(w, httptest.NewRequest("GET", "/", nil), errors.New("the agent failed: "+c.Text))
			var body map[string]string
			json.Unmarshal(w.Body.Bytes(), &body)
			if leak := displaytest.Leak(body["error"]); leak != "" {
				t.Errorf("an error shows %s: %q", leak, body["error"])
			}
		})
	}
}

// oneStepAgents is an agent service with one run and one pending proposal whose effect
// preview the test runs again; it records the decisions it gets.
type oneStepAgents struct {
	Agents    // the calls a step makes are below; any other panics
	mu        sync.Mutex
	p         api.Proposal
	decisions []api.DecideRequest
}

func (f *oneStepAgents) Agent(context.Context, string) (*api.Agent, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	a := &api.Agent{ID: "a-1", RunID: "r-1", State: api.StatePaused}
	if len(f.decisions) == 0 {
		p := f.p
		a.State, a.Pending = api.StateAwaitingDecision, &p
	}
	return a, nil
}

func (f *oneStepAgents) Replay(context.Context, string) (*api.Replay, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return &api.Replay{Run: api.Run{ID: "r-1", AgentID: "a-1"}, Steps: []api.ReplayStep{{Proposal: f.p}}}, nil
}

func (f *oneStepAgents) Commands(context.Context, string) ([]api.CommandInfo, error) { return nil, nil }

func (f *oneStepAgents) Decide(_ context.Context, _ string, req api.DecideRequest) (*api.Decision, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if req.Hash == "" || !strings.HasPrefix(f.p.Ref(), req.Hash) {
		return nil, errors.New("decision refused: the proposal changed since it was shown")
	}
	f.decisions = append(f.decisions, req)
	return &api.Decision{ProposalID: req.ProposalID, Kind: req.Kind}, nil
}

// rerun gives the pending proposal's effect preview a new captured change, as a stale
// preview run again does: same proposal id, a new Ref.
func (f *oneStepAgents) rerun(toRoot string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	pv := *f.p.Preview
	pv.Effect = &api.Effect{Summary: "changes 1 file", From: 1, To: 3, ToRoot: toRoot}
	f.p.Preview = &pv
}

// An empty step approves a pending proposal only as a reply showed it: after its
// effect preview ran again (same id, another change), the step shows it again instead,
// and the approval that follows names the change shown then.
func TestEmptyStepApprovesOnlyTheChangeItShowed(t *testing.T) {
	f := &oneStepAgents{p: api.Proposal{ID: "p-1", AgentID: "a-1", RunID: "r-1", Command: "execute_shell",
		Args: json.RawMessage(`{"command_line":"make"}`), Hash: "h1", Status: api.ProposalPending,
		Preview: &api.Preview{Kind: api.PreviewProgram, Effect: &api.Effect{Summary: "changes 1 file", From: 1, To: 2, ToRoot: "aa"}}}}
	srv := httptest.NewServer(New(Options{Agents: f}))
	defer srv.Close()
	step := func() int {
		t.Helper()
		r, err := http.Post(srv.URL+"/ap/v1/agent/tasks/r-1/steps", "application/json", strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
		return r.StatusCode
	}
	if code := step(); code != 200 || len(f.decisions) != 0 {
		t.Fatalf("first step: %d, %d decisions; want it shown, none made", code, len(f.decisions))
	}
	f.rerun("bb")
	if code := step(); code != 200 || len(f.decisions) != 0 {
		t.Fatalf("step after the preview ran again: %d, %d decisions; want it shown again, none made", code, len(f.decisions))
	}
	if code := step(); code != 200 || len(f.decisions) != 1 {
		t.Fatalf("step after it was shown again: %d, %d decisions; want one approval", code, len(f.decisions))
	}
	if d := f.decisions[0]; d.Kind != api.DecisionApprove || d.Hash != f.p.Ref() {
		t.Errorf("approval = %+v, want approve naming Ref %s", d, f.p.Ref())
	}
}

// An interrupted step says the two things interrupted covers: the daemon stopped while
// its command ran, or its effect preview was run again; either way a person decides anew.
func TestAnInterruptedStepSaysWhatInterruptedCovers(t *testing.T) {
	h := New(Options{}).(*handler)
	rp := &api.Replay{Run: api.Run{ID: "r-1"}, Steps: []api.ReplayStep{
		{Proposal: api.Proposal{ID: "p-1", Command: "execute_shell", Args: json.RawMessage(`{"command_line":"make"}`), Status: api.ProposalInterrupted}},
	}}
	m := &stepMapper{h: h, rp: rp, writers: map[string]bool{}}
	s := m.step(0)
	for _, want := range []string{"when the daemon stopped", "effect preview was run again", "awaiting a decision"} {
		if !strings.Contains(s.Output, want) {
			t.Errorf("an interrupted step shows %q, want it to say %q", s.Output, want)
		}
	}
}
