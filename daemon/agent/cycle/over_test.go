package cycle

import "testing"

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
