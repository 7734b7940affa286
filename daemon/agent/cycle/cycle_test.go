package cycle

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentd/agentd/internal/testutil"
)

// The golden files are the table and the diagram: go test ./daemon/agent/cycle -update
// rewrites them after a change to Next, for review in the diff.
func TestTableGolden(t *testing.T) { testutil.Golden(t, "testdata/cycle.golden", []byte(Table())) }

func TestMermaidCurrent(t *testing.T) { testutil.Golden(t, "README.md", []byte(Mermaid())) }

func TestIllegalNamesStateAndEvent(t *testing.T) {
	_, _, err := Next(State{Agent: Idle}, Event{Kind: Pause})
	var ill *IllegalError
	if !errors.As(err, &ill) {
		t.Fatalf("pausing an idle agent: got %v, want an IllegalError", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "pause") || !strings.Contains(msg, "idle/none") {
		t.Errorf("error %q should name the event and the state", msg)
	}
}

func TestNext(t *testing.T) {
	for _, c := range []struct {
		name   string
		from   State
		ev     Event
		want   State
		effect EffectKind
		// then, when set, is what the loop does next in want (a person's wait, a run):
		// NextMove's, as the verdict in want leaves it to a person.
		then Then
	}{
		{"approve_runs_awaiting_agent", State{AwaitingDecision, Pending}, Event{Kind: Approve}, State{Executing, Approved}, RecordDecision, ""},
		{"approve_keeps_paused_agent_paused", State{Paused, Pending}, Event{Kind: Approve}, State{Paused, Approved}, RecordDecision, ""},
		{"approve_n_grants", State{AwaitingDecision, Interrupted}, Event{Kind: ApproveN}, State{Executing, Approved}, Grant, ""},
		{"deny_ends_run", State{AwaitingDecision, Pending}, Event{Kind: Deny}, State{Idle, Denied}, EndRun, ""},
		{"feedback_thinks_again", State{AwaitingDecision, Pending}, Event{Kind: GiveFeedback}, State{Thinking, Feedback}, RecordEpisode, ""},
		{"policy_refusal_is_feedback", State{Thinking, Pending}, Event{Kind: PolicyRefuse}, State{Thinking, Feedback}, RecordEpisode, ""},
		{"proposal_while_paused_is_superseded", State{Paused, None}, Event{Kind: Proposed}, State{Paused, Superseded}, SetProposal, ""},
		{"repeat_asks", State{Thinking, None}, Event{Kind: ProposedRepeat}, State{AwaitingDecision, Pending}, SetAgent, Wait},
		{"repeat_ends_grant", State{Thinking, None}, Event{Kind: ProposedRepeat}, State{AwaitingDecision, Pending}, EndGrant, ""},
		{"loop_pauses_and_asks", State{Thinking, None}, Event{Kind: ProposedLoop}, State{Paused, Pending}, SetAgent, EndLoop},
		{"loop_ends_grant", State{Thinking, None}, Event{Kind: ProposedLoop}, State{Paused, Pending}, EndGrant, ""},
		{"loop_after_stop_is_superseded", State{Idle, None}, Event{Kind: ProposedLoop}, State{Idle, Superseded}, SetProposal, ""},
		{"question_waits_for_answer", State{Executing, Approved}, Event{Kind: StartQuestion}, State{AwaitingDecision, Started}, SetAgent, Wait},
		{"crash_interrupts_started", State{Executing, Started}, Event{Kind: Recovered}, State{AwaitingDecision, Interrupted}, SetAgent, Wait},
		{"crash_after_run_ended_fails_it", State{RunOver, Started}, Event{Kind: Recovered}, State{RunOver, ProposalFail}, SetProposal, ""},
		{"idempotent_reruns", State{Executing, Started}, Event{Kind: RecoveredIdempotent}, State{Executing, Approved}, SetProposal, RunIt},
		{"result_of_old_run_moves_proposal_only", State{RunOver, Started}, Event{Kind: Finish}, State{RunOver, Succeeded}, RecordEpisode, ""},
		{"stop_supersedes_pending", State{AwaitingDecision, Pending}, Event{Kind: Stop}, State{Idle, Superseded}, Cancel, ""},
		{"stop_leaves_running_command", State{Executing, Started}, Event{Kind: Stop}, State{Idle, Started}, EndRun, ""},
		{"run_budget_withdraws_started", State{Executing, Started}, Event{Kind: RunBudgetHit}, State{Idle, ProposalFail}, EndRun, ""},
		{"task_supersedes_interrupted", State{Failed, Interrupted}, Event{Kind: Task}, State{Thinking, Superseded}, StartRun, ""},
		{"writing_start_checkpoints_first", State{Executing, Approved}, Event{Kind: Start, Writes: true}, State{Executing, Started}, Checkpoint, ""},
		{"writing_end_records_change", State{Executing, Started}, Event{Kind: Succeed, Writes: true}, State{Thinking, Succeeded}, RecordChange, ""},
		{"writing_failure_records_change", State{Executing, Started}, Event{Kind: Fail, Writes: true}, State{Thinking, ProposalFail}, RecordChange, ""},
		{"unchecked_end_pauses_for_a_person", State{Executing, Started}, Event{Kind: Succeed, Writes: true, Unchecked: true}, State{Paused, Succeeded}, RecordChange, EndLoop},
		{"unchecked_failure_pauses_for_a_person", State{Executing, Started}, Event{Kind: Fail, Writes: true, Unchecked: true}, State{Paused, ProposalFail}, RecordChange, ""},
		{"unchecked_late_end_pauses_the_agent_that_went_on", State{Thinking, None}, Event{Kind: LateEnd, Writes: true, Unchecked: true}, State{Paused, None}, RecordChange, EndLoop},
		{"lost_late_end_pauses_the_agent_that_went_on", State{Thinking, Started}, Event{Kind: RecoveredLate, Writes: true}, State{Paused, ProposalFail}, MarkUnchecked, EndLoop},
		{"lost_late_end_marks_an_idle_agent", State{Idle, Started}, Event{Kind: RecoveredLate, Writes: true}, State{Idle, ProposalFail}, MarkUnchecked, ""},
		{"checked_late_end_leaves_the_agent_going", State{Thinking, None}, Event{Kind: LateEnd, Writes: true}, State{Thinking, None}, RecordChange, ""},
		{"rewind_restores_idle_agent", State{Idle, None}, Event{Kind: Rewind}, State{Idle, None}, Restore, ""},
		{"rewind_keeps_pending_proposal", State{AwaitingDecision, Pending}, Event{Kind: Rewind}, State{AwaitingDecision, Pending}, Restore, Wait},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, effects, err := Next(c.from, c.ev)
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Errorf("Next(%s, %s) = %s, want %s", c.from, c.ev.Kind, got, c.want)
			}
			found := false
			for _, e := range effects {
				found = found || e.Kind == c.effect
			}
			if !found {
				t.Errorf("Next(%s, %s) effects %v lack %s", c.from, c.ev.Kind, effects, c.effect)
			}
			if c.then == "" {
				return
			}
			r := Round{Agent: got.Agent, Proposal: got.Proposal, Question: c.ev.Kind == StartQuestion, Verdict: Ask}
			if m := NextMove(r); m.Then != c.then {
				t.Errorf("after Next(%s, %s): NextMove(%s) = %s, want %s", c.from, c.ev.Kind, r, m, c.then)
			}
		})
	}
}

// Every legal transition that sets the agent's state says so in an effect, and every
// change of the proposal's status too: the applier persists effects, not states.
func TestEffectsCarryEveryChange(t *testing.T) {
	for _, a := range AgentStates {
		for _, p := range OpenStatuses {
			for _, k := range Kinds {
				from := State{Agent: a, Proposal: p}
				to, effects, err := Next(from, Event{Kind: k})
				if err != nil {
					continue
				}
				var sawAgent, sawProposal bool
				for _, e := range effects {
					sawAgent = sawAgent || (e.Kind == SetAgent && e.Agent == to.Agent)
					sawProposal = sawProposal || (e.Kind == SetProposal && e.Proposal == to.Proposal)
				}
				if to.Agent != a && !sawAgent {
					t.Errorf("%s + %s moves the agent to %s without a set_agent effect", from, k, to.Agent)
				}
				if to.Proposal != p && !sawProposal {
					t.Errorf("%s + %s moves the proposal to %s without a set_proposal effect", from, k, to.Proposal)
				}
				if a == RunOver && to.Agent != RunOver {
					t.Errorf("%s + %s moves an agent on another run", from, k)
				}
			}
		}
	}
}

// The loop's table: every round NextMove tells apart and its move.
func TestLoopTableGolden(t *testing.T) {
	testutil.Golden(t, "testdata/loop.golden", []byte(LoopTable()))
}

// Every event NextMove applies is one the cycle takes in the round's state: the loop
// never asks the table for a transition it does not have.
func TestLoopEventsAreLegal(t *testing.T) {
	for _, r := range Rounds() {
		m := NextMove(r)
		if m.Event == NoEvent {
			continue
		}
		from := State{Agent: r.Agent, Proposal: r.Proposal}
		if _, _, err := Next(from, Event{Kind: m.Event}); err != nil {
			t.Errorf("round %s: move %s: %v", r, m, err)
		}
	}
}

// A rewind is refused while a step is in flight, in every agent state: its command or
// helper could write beside the restore. The refusal is the table's, named.
func TestRewindIsRefusedWhileAStepIsStarted(t *testing.T) {
	for _, a := range AgentStates {
		_, _, err := Next(State{Agent: a, Proposal: Started}, Event{Kind: Rewind})
		var ill *IllegalError
		if !errors.As(err, &ill) {
			t.Errorf("rewind of %s/started: got %v, want an IllegalError", a, err)
		}
	}
}

// A budget's verdict is one value with a scope: the run's ends the run, the agent's pauses
// it. Only a run's wall time cuts into a proposal in progress; every other budget waits
// until no proposal is open.
func TestBudgetVerdictPicksItsScopesEventAndWaitsForTheOpenProposal(t *testing.T) {
	for _, c := range []struct {
		name     string
		over     Over
		proposal ProposalStatus
		want     Move
	}{
		{"run_time_between_steps", Over{Scope: RunScope, Budget: TimeBudget}, None, Move{RunBudgetHit, Again}},
		{"run_time_cuts_a_started_command", Over{Scope: RunScope, Budget: TimeBudget}, Started, Move{RunBudgetHit, Again}},
		{"run_steps_between_steps", Over{Scope: RunScope, Budget: "steps"}, None, Move{RunBudgetHit, Again}},
		{"run_steps_wait_for_the_approved_proposal", Over{Scope: RunScope, Budget: "steps"}, Approved, Move{Start, RunIt}},
		{"agent_tokens_between_steps", Over{Scope: AgentScope, Budget: "tokens"}, None, Move{AgentBudgetHit, Again}},
		{"agent_time_waits_for_the_approved_proposal", Over{Scope: AgentScope, Budget: TimeBudget}, Approved, Move{Start, RunIt}},
		{"agent_disk_waits_for_the_pending_proposal", Over{Scope: AgentScope, Budget: "disk"}, Pending, Move{NoEvent, Weigh}},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := c.over
			got := NextMove(Round{Agent: Thinking, Proposal: c.proposal, Over: &o})
			if got != c.want {
				t.Errorf("over %s:%s with proposal %q: NextMove = %s, want %s", o.Scope, o.Budget, c.proposal, got, c.want)
			}
			if _, _, err := Next(State{Agent: Thinking, Proposal: c.proposal}, Event{Kind: got.Event}); got.Event != NoEvent && err != nil {
				t.Errorf("the move's event is illegal in its state: %v", err)
			}
		})
	}
}
