package cli_test

import (
	"net/http"
	"testing"

	"github.com/agentd/agentd/api"
)

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
	waitOutput(t, s.errOut, "Approve? [y / y -N / y! / n / n! / feedback / ?]: ", 1)
	s.typeLine(t, "y")
	waitOutput(t, s.out, "changes 1 file (+1 −1)", 1)
	waitOutput(t, s.errOut, "Approve? [y / y -N / y! / n / n! / feedback / ?]: ", 2)
	s.typeLine(t, "y")
	if code := s.exit(t); code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", code, s.errOut)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.decisions) != 2 || f.decisions[0].Hash != first.Ref() || f.decisions[1].Hash != again.Ref() || first.Ref() == again.Ref() {
		t.Errorf("decisions %+v: want the first naming ref %s, the second %s", f.decisions, first.Ref(), again.Ref())
	}
}
