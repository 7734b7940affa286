package agentprotocol

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/api"
)

// markedAgents is an agent service with one run whose agent is paused on an unchecked
// change (api.UncheckedReason), which no reply has shown; it records the resumes it gets.
type markedAgents struct {
	Agents
	mu      sync.Mutex
	resumed int
}

const uncheckedPause = "an unchecked change waits for a person: step 3 (execute_shell) of run r-1: could not put back lib: the checkpoints could not capture it; look at the workspace (agentctl diff), then resume it"

func (f *markedAgents) Agent(context.Context, string) (*api.Agent, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	a := &api.Agent{ID: "a-1", Name: "a", RunID: "r-1", Task: "t", State: api.StatePaused, StateReason: uncheckedPause}
	if f.resumed > 0 {
		a.State, a.StateReason = api.StateThinking, ""
	}
	return a, nil
}

func (f *markedAgents) Replay(context.Context, string) (*api.Replay, error) {
	step := api.ReplayStep{Proposal: api.Proposal{ID: "p-3", AgentID: "a-1", RunID: "r-1", Step: 3, Command: "execute_shell", Status: api.ProposalSucceeded}}
	return &api.Replay{Run: api.Run{ID: "r-1", AgentID: "a-1"}, Steps: []api.ReplayStep{step}}, nil
}

func (f *markedAgents) Commands(context.Context, string) ([]api.CommandInfo, error) { return nil, nil }

func (f *markedAgents) Resume(context.Context, string) (*api.Agent, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.resumed++
	return &api.Agent{ID: "a-1", RunID: "r-1", State: api.StateThinking}, nil
}

// TestAnEmptyStepDoesNotClearAnUncheckedMark: only a person clears the mark of an
// unchecked change, having looked (agentctl resume). A client looping on empty steps
// (AutoGPT's benchmark runner, a script) gets a refusal naming agentctl resume, and the
// agent is not resumed — as an empty step approves no proposal no reply showed.
func TestAnEmptyStepDoesNotClearAnUncheckedMark(t *testing.T) {
	f := &markedAgents{}
	srv := httptest.NewServer(New(Options{Agents: f, StepWait: 200 * time.Millisecond}))
	defer srv.Close()
	for try := 1; try <= 2; try++ {
		r, err := http.Post(srv.URL+"/ap/v1/agent/tasks/r-1/steps", "application/json", strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(r.Body)
		r.Body.Close()
		if f.resumed > 0 {
			t.Fatalf("empty step %d (status %d), with no reply having shown the pause on an unchecked change, resumed the agent", try, r.StatusCode)
		}
		if r.StatusCode != http.StatusConflict || !strings.Contains(string(body), "agentctl resume") {
			t.Fatalf("empty step %d on a marked agent: status %d %s; want 409 naming agentctl resume", try, r.StatusCode, body)
		}
		var e struct{ Error string }
		if json.Unmarshal(body, &e) != nil || !strings.Contains(e.Error, `{"decision": "resume"}`) {
			t.Fatalf("empty step %d on a marked agent: %s; want the refusal to name the step that resumes it", try, body)
		}
	}
}

// TestAResumeStepClearsAnUncheckedMark: a step that says resume resumes the marked agent,
// as agentctl resume does (whose resume clears the mark); on an agent that is not paused
// it is refused.
func TestAResumeStepClearsAnUncheckedMark(t *testing.T) {
	f := &markedAgents{}
	srv := httptest.NewServer(New(Options{Agents: f, StepWait: 200 * time.Millisecond}))
	defer srv.Close()
	step := func() (int, string) {
		r, err := http.Post(srv.URL+"/ap/v1/agent/tasks/r-1/steps", "application/json", strings.NewReader(`{"additional_input": {"decision": "resume"}}`))
		if err != nil {
			t.Fatal(err)
		}
		defer r.Body.Close()
		body, _ := io.ReadAll(r.Body)
		return r.StatusCode, string(body)
	}
	if code, body := step(); code != http.StatusOK || f.resumed != 1 {
		t.Fatalf("a resume step on a marked agent: status %d %s, %d resumes; want 200 and the agent resumed", code, body, f.resumed)
	}
	if code, body := step(); code != http.StatusConflict || f.resumed != 1 || !strings.Contains(body, "not paused") {
		t.Fatalf("a resume step on an agent that is thinking: status %d %s, %d resumes; want 409 and no resume", code, body, f.resumed)
	}
}
