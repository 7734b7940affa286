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
)

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
