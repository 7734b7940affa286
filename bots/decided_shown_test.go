package bots

import (
	"context"
	"strings"
	"testing"

	"github.com/agentd/agentd/api"
)

// nowService has the daemon's proposals as they are now (decided: no longer asked
// again), for a relay that would read them instead of the event.
type nowService struct {
	helperService
	now []api.Proposal
}

func (s *nowService) Proposals(context.Context, string) ([]api.Proposal, error) { return s.now, nil }

// roleWaiting is a relay following team run t-1, whose role agent a-2 (programmer) has
// proposal p-2 posted in the team's thread; the proposal is returned as posted.
func roleWaiting(t *testing.T) (*Relay, *fakeAdapter, *api.Proposal) {
	ctx := context.Background()
	p := &api.Proposal{ID: "p-2", AgentID: "a-2", Step: 1, Command: "write_file", Status: api.ProposalPending, Args: []byte(`{}`)}
	svc := &helperService{agents: []api.Agent{{ID: "a-2", Name: "t1-programmer", State: api.StateAwaitingDecision, Pending: p}}}
	teams := &fakeTeams{runs: map[string]*api.TeamRun{"t-1": {ID: "t-1", Status: api.TeamRunning, Agents: map[string]string{"programmer": "a-2"}}}}
	r, ad := teamRelay(t, svc, teams)
	r.posts.handle(ctx, api.Event{Type: api.EventProposal, AgentID: "a-2", Proposal: p})
	r.out.flush()
	if len(ad.posts) != 1 {
		t.Fatalf("posts = %q; want the role's proposal in its team's thread", ad.posts)
	}
	return r, ad, p
}

// removedNow is the removal event of a-2 as the daemon publishes it, with the messages
// open in the store (each with its proposal as it is now, and decision), which the store
// then deletes with the agent: the relay's reads find none of them any more.
func removedNow(r *Relay, now *api.Proposal, d *api.Decision) api.Event {
	binds := r.opt.Bindings.(*memBindings)
	open, _ := binds.OpenMessages(context.Background(), "a-2")
	binds.mu.Lock()
	defer binds.mu.Unlock()
	for _, m := range open {
		m.Proposal, m.Decision = now, d
		delete(binds.msgs, m.ProposalID+m.Platform+m.Kind)
	}
	return api.Event{Type: api.EventRemoved, AgentID: "a-2", Messages: open}
}

// A role agent removed right after its proposal ended: its message shows how the proposal
// ended, once, not that the agent was removed before a decision. Decided: the decision.
// Stopped: the run ended before a decision (the removal event shows its proposal
// superseded); the daemon publishes the stop's state, then the run's end, then the removal.
func TestARoleRemovedShowsHowItsProposalEnded(t *testing.T) {
	d := &api.Decision{ProposalID: "p-2", Kind: api.DecisionApprove, By: "U1", Source: "slack"}
	idle := &api.Agent{ID: "a-2", Name: "t1-programmer", State: api.StateIdle, StateReason: "stopped"}
	for _, tc := range []struct {
		name     string
		now      api.ProposalStatus
		decision *api.Decision
		before   func(asked api.Proposal) []api.Event
		want     string
		why      string
	}{
		{"a_role_decided_then_removed_shows_the_decision", api.ProposalSucceeded, d, func(asked api.Proposal) []api.Event {
			return []api.Event{{Type: api.EventDecision, AgentID: "a-2", Decision: d, Decided: &asked}}
		}, "✅ Approved by", "want the proposal's message to show its approval once"},
		{"a_role_stopped_then_removed_says_its_run_ended", api.ProposalSuperseded, nil, func(api.Proposal) []api.Event {
			return []api.Event{{Type: api.EventState, AgentID: "a-2", Agent: idle}, {Type: api.EventFinish, AgentID: "a-2", Agent: idle, Message: "stopped"}}
		}, "The run ended before a decision", "want the proposal's message closed once as its run ended"},
		// a relay behind the daemon: the removal is the first it hears of the end of a
		// proposal that ran with no person's decision (a role's finish, say)
		{"a_role_whose_proposal_ran_then_removed_shows_no_removal", api.ProposalSucceeded, nil, func(api.Proposal) []api.Event { return nil },
			"Step 1", "want the proposal's message closed once, not saying the agent was removed before a decision: it ran"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			r, ad, p := roleWaiting(t)
			now := *p
			now.Status = tc.now
			gone := removedNow(r, &now, tc.decision)
			for _, e := range append(tc.before(*p), gone) {
				r.posts.handle(ctx, e)
			}
			r.out.flush()
			ad.mu.Lock()
			defer ad.mu.Unlock()
			if len(ad.updates) != 1 || !strings.Contains(ad.updates[0], tc.want) || strings.Contains(ad.updates[0], "removed") {
				t.Fatalf("updates = %q; %s", ad.updates, tc.why)
			}
		})
	}
}

// A proposal asked again and then decided keeps its "asked again" note: the decision's
// edit shows the proposal as it was asked when decided, not as the daemon has it now.
func TestAProposalAskedAgainKeepsItsNoteOnceDecided(t *testing.T) {
	ctx := context.Background()
	p := &api.Proposal{ID: "p-1", AgentID: "a-1", Step: 1, Command: "write_file", Status: api.ProposalPending, Args: []byte(`{}`)}
	svc := &nowService{helperService: helperService{agents: []api.Agent{{ID: "a-1", Name: "boss", State: api.StateAwaitingDecision, Pending: p}}}}
	r, ad := threadRelay(ctx, svc)
	r.posts.handle(ctx, api.Event{Type: api.EventProposal, AgentID: "a-1", Proposal: p})
	asked := *p
	asked.Status = api.ProposalInterrupted
	r.posts.handle(ctx, api.Event{Type: api.EventProposal, AgentID: "a-1", Proposal: &asked})
	now := asked
	now.Status = api.ProposalApproved
	svc.now = []api.Proposal{now}
	d := &api.Decision{ProposalID: "p-1", Kind: api.DecisionApprove, By: "U1", Source: "slack"}
	r.posts.handle(ctx, api.Event{Type: api.EventDecision, AgentID: "a-1", Decision: d, Decided: &asked})
	r.out.flush()
	ad.mu.Lock()
	defer ad.mu.Unlock()
	if len(ad.updates) != 2 {
		t.Fatalf("updates = %q; want the message asked again, then decided", ad.updates)
	}
	if last := ad.updates[1]; !strings.Contains(last, askedAgainNote) || !strings.Contains(last, "✅ Approved by") {
		t.Errorf("the decided message = %q; want its approval and its asked-again note", last)
	}
}
