package cycle

import "github.com/agentd/agentd/api"

// Round is what an agent's loop reads before each round: the agent's state, its open
// proposal, and the verdicts of the budgets, the policy and the helpers on them.
type Round struct {
	Agent    AgentState
	Proposal ProposalStatus // None: no open proposal
	// Question: the open proposal is ask_user's, whose answer comes from a person.
	Question bool
	// Previewed: the approved proposal's effect preview captured its change, and the
	// profile it runs in may write the workspace: approving applies that change.
	Previewed bool
	// Helping: the started proposal waits for a helper agent, whose end delivers its
	// result; a started proposal neither a question nor helped lost its result.
	Helping bool
	// Rerun: the pending proposal's effect preview ran ahead in the policy's bounded
	// profile and was dropped for a person's (bounded_preview_asked), and its run ahead
	// again in their profile has not come in: not begun yet, or cut short by a pause or
	// a restart. Read for a paused agent too, whose proposal a person may be deciding.
	Rerun bool
	// Over is the budgets' one verdict: the budget that ran out, in its scope; nil
	// while every budget holds.
	Over *Over
	// Verdict is Authorize's on a pending proposal; "" until it is weighed, which
	// happens in the transaction that records it.
	Verdict Verdict
}

// Scope is what a budget bounds.
type Scope string

// The budgets' scopes.
const (
	RunScope   Scope = api.BudgetScopeRun   // one run: it ends, the agent goes idle
	AgentScope Scope = api.BudgetScopeAgent // the agent over all its runs: it pauses
)

// TimeBudget is the budget of wall time, the one that ends a run whatever it is doing.
const TimeBudget = "time"

// Over is the verdict of the budgets on a round: which budget ran out (steps, tokens,
// time or disk), in which scope, and why (with the command that raises it).
type Over struct {
	Scope  Scope
	Budget string
	Why    string
}

// Event is the event the verdict makes: the run ends, or the agent pauses.
func (o *Over) Event() Kind {
	if o.Scope == RunScope {
		return RunBudgetHit
	}
	return AgentBudgetHit
}

// cuts reports whether the verdict stops the agent whatever it is doing: a run's wall
// time. Every other budget keeps it only from another proposal.
func (o *Over) cuts() bool { return o.Scope == RunScope && o.Budget == TimeBudget }

// Then is what the loop does once a round's event is applied.
type Then string

// What the loop does next.
const (
	EndLoop  Then = "end_loop"  // no loop works for the agent now: the loop ends
	Wait     Then = "wait"      // wait for a wake-up: a person, a helper, a task
	Again    Then = "again"     // go round again at once
	AskModel Then = "ask_model" // ask the model for the next proposal
	Weigh    Then = "weigh"     // weigh the pending proposal against the policy, in a write
	RunIt    Then = "run"       // start the approved proposal: run its command, or ask its question
	// RunAhead runs the pending proposal ahead again in a person's profile (Round.Rerun)
	// and asks them on what that gives (preview_rerun), paused or not; a pause or a
	// restart before it is in leaves the proposal as it was, to run ahead on resume.
	RunAhead Then = "run_ahead"
)

// Thens lists what a loop may do next; the runner's loop handles each.
var Thens = []Then{EndLoop, Wait, Again, AskModel, Weigh, RunIt, RunAhead}

// NoEvent is a move's event when the round changes nothing before what the loop does.
const NoEvent Kind = ""

// undecided is a pending proposal's verdict before it is weighed.
const undecided Verdict = ""

// Move is a round's answer: the event to apply (NoEvent for none), then what the loop does.
type Move struct {
	Event Kind
	Then  Then
}

// NextMove is the loop's one decision: from what a round read, the event that moves the
// agent on and what the loop does after it. It is pure, like Next; the runner applies
// the event through the cycle and does what Then says, nothing else.
func NextMove(r Round) Move {
	if r.Over != nil && (r.Over.cuts() || r.Proposal == None) && Active(r.Agent) {
		return Move{r.Over.Event(), Again}
	}
	if r.Rerun && r.Proposal == Pending && (Active(r.Agent) || r.Agent == Paused) {
		return Move{NoEvent, RunAhead} // before it is weighed: a person decides it, on that run
	}
	if !Active(r.Agent) {
		return Move{NoEvent, EndLoop}
	}
	switch r.Proposal {
	case None:
		return Move{Think, AskModel}
	case Approved:
		switch {
		case r.Question:
			return Move{StartQuestion, RunIt}
		case r.Previewed:
			return Move{StartApply, RunIt}
		}
		return Move{Start, RunIt}
	case Pending:
		switch r.Verdict {
		case undecided:
			return Move{NoEvent, Weigh}
		case Allow:
			return Move{PolicyAllow, RunIt}
		case Refuse:
			return Move{PolicyRefuse, Again}
		}
		return awaitPerson(r.Agent)
	case Started:
		switch {
		case r.Question:
			return awaitPerson(r.Agent)
		case r.Helping && r.Agent == Executing:
			return Move{NoEvent, EndLoop} // the helper's end wakes it
		case r.Helping:
			return Move{WaitHelper, EndLoop} // resumed while its helper works: still executing
		}
		return Move{ResultLost, Wait}
	}
	return awaitPerson(r.Agent) // interrupted: a person decides again
}

// awaitPerson is the move of an agent whose proposal waits for a person.
func awaitPerson(a AgentState) Move {
	if a == AwaitingDecision {
		return Move{NoEvent, Wait}
	}
	return Move{Await, Wait}
}
