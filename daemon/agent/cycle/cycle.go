// Package cycle is the agent cycle — think → propose → authorize → execute → remember —
// written down as a pure state machine. Next says what an agent and its open proposal
// become on an event, and which effects follow; NextMove says which event an agent's
// loop applies next and what it does after; Authorize says who may run a proposal.
// None does I/O, reads a clock or touches the store: daemon/agent carries out the
// effects (its applier is the only code that writes an agent's state or a proposal's
// status). The table of every state × event is testdata/cycle.golden, drawn in README.md;
// the loop's is testdata/loop.golden.
package cycle

import (
	"fmt"

	"github.com/agentd/agentd/api"
)

// AgentState and ProposalStatus are the wire types: the cycle's states are what the API shows.
type (
	AgentState     = api.AgentState
	ProposalStatus = api.ProposalStatus
)

// Agent states, as client defines them, plus RunOver.
const (
	Thinking         = api.StateThinking
	AwaitingDecision = api.StateAwaitingDecision
	Executing        = api.StateExecuting
	WaitingForModel  = api.StateWaitingForModel
	Paused           = api.StatePaused
	Idle             = api.StateIdle
	Failed           = api.StateFailed
	// RunOver stands for the agent when the proposal's run is no longer the agent's
	// current run: an event then moves the proposal only, never the agent.
	RunOver AgentState = "run_over"
)

// Initial is a new agent's state, before its first task.
const Initial = Idle

// Proposal statuses, as client defines them, plus None.
const (
	None         ProposalStatus = "" // no open proposal (or one not yet stored)
	Pending                     = api.ProposalPending
	Approved                    = api.ProposalApproved
	Started                     = api.ProposalStarted
	Interrupted                 = api.ProposalInterrupted
	Succeeded                   = api.ProposalSucceeded
	ProposalFail                = api.ProposalFailed
	Denied                      = api.ProposalDenied
	Feedback                    = api.ProposalFeedback
	Superseded                  = api.ProposalSuperseded
)

// State is an agent's state with its open proposal's status (None when it has none).
type State struct {
	Agent    AgentState
	Proposal ProposalStatus
}

func (s State) String() string {
	p := string(s.Proposal)
	if p == "" {
		p = "none"
	}
	return string(s.Agent) + "/" + p
}

// Kind names an event.
type Kind string

// Events, grouped by the step of the cycle they come from.
const (
	// Think: the loop asks the model. ModelDown: the model server failed (reason).
	// InvalidReplies: the model gave too many invalid replies in a row (reason).
	Think          Kind = "think"
	ModelDown      Kind = "model_down"
	InvalidReplies Kind = "invalid_replies"
	// Previewing: the model's proposal runs ahead on a copy of the workspace (its
	// effect preview, up to a minute) before it is stored and shown; the agent thinks
	// on, its reason saying so.
	Previewing Kind = "previewing"
	// The model replied with a proposal: a new one; the same command and args as the
	// previous one (a person is asked, reason); a loop the smart model thinks over; a
	// loop of another shape the watchdog caught (the agent pauses, a person is asked,
	// reason). A repeat and a loop end what is left of a `y -N` grant.
	Proposed        Kind = "proposed"
	ProposedRepeat  Kind = "proposed_repeat"
	ProposedRethink Kind = "proposed_rethink"
	ProposedLoop    Kind = "proposed_loop"
	// The policy's verdict (Authorize): run it, or refuse it as feedback to the model.
	PolicyAllow  Kind = "policy_allow"
	PolicyRefuse Kind = "policy_refuse"
	// Await: no policy decides, a person is asked. BoundedPreviewAsked: a person
	// decides a pending proposal whose effect preview ran ahead in the policy's bounded
	// profile; that change is not theirs to apply: the preview is dropped (reason), and
	// approving runs the command itself, in the person's profile. PreviewRerun: that
	// preview, run ahead again in the person's profile, is in: it replaces the dropped
	// one and the person is asked on it (reason), as on a stale preview run again —
	// of a person only, never the policy.
	Await               Kind = "await"
	BoundedPreviewAsked Kind = "bounded_preview_asked"
	PreviewRerun        Kind = "preview_rerun"
	// A person's decision or answer.
	Approve      Kind = "approve"
	ApproveN     Kind = "approve_n" // y -N: this one and the next N-1
	Deny         Kind = "deny"      // reason: the agent's; Detail: the run's end
	GiveFeedback Kind = "feedback"
	Answer       Kind = "answer" // Result: the answer
	// Execution: started (a command, or ask_user's question), parked on a helper, and
	// its end (Result), finish's end (reason, Detail), a result the store lost (reason).
	Start         Kind = "start"
	StartQuestion Kind = "start_question"
	WaitHelper    Kind = "wait_helper"
	Succeed       Kind = "succeeded"
	Fail          Kind = "failed"
	Finish        Kind = "finished"
	ResultLost    Kind = "result_lost"

	// StartApply starts an approved proposal whose effect preview captured its change:
	// that change is applied instead of running the command again. PreviewStale: the
	// workspace changed since the preview, nothing was applied, a person decides again
	// (reason; Result when its run is over) on the preview run again on the workspace as
	// it is now, shown to them again.
	StartApply   Kind = "start_apply"
	PreviewStale Kind = "preview_stale"
	// Crash recovery of a started proposal (reason; Result when its run is over); an
	// idempotent command runs again. What a step that Writes wrote before the restart was
	// never checked: a person asked again is told so, and an idempotent one marks the
	// agent and pauses it for a person before it runs again.
	Recovered           Kind = "recovered"
	RecoveredIdempotent Kind = "recovered_idempotent"
	// RecoveredLate: a restart found started a step whose run had ended (stopped, out of
	// budget, replaced) while it ran: it fails, asking no one, and its end being lost, what
	// it wrote (Writes) was never checked: the agent is marked, and paused as after an
	// unchecked late end (Reason: why), whatever run it is on now.
	RecoveredLate Kind = "recovered_late"
	// Withdraw ends a started proposal that nothing runs (a question, a helper wait).
	Withdraw Kind = "withdraw"
	// LateEnd is the end of a step whose proposal was withdrawn while its command ran
	// (its run's budget ran out): the agent has no open proposal, what the command did is
	// remembered all the same, and the agent is shown as it is now — paused, when it
	// went on and what the step wrote is Unchecked, as after an end on time.
	LateEnd Kind = "late_end"
	// Created: a new agent was stored, idle, or thinking on its first run's task; its
	// profile was written by the model on its first step (Detail: what happened). An
	// invalid reply: the model's reply failed its checks, a strike (Detail: what failed).
	Created        Kind = "created"
	ProfileWritten Kind = "profile_written"
	InvalidReply   Kind = "invalid_reply"
	// Removed: a person removed the agent (with its helpers), whatever it was doing.
	Removed Kind = "removed"
	// Edited: a person changed what the agent is or may do (its policy, budget, profile…)
	// without moving it; it is shown as it is now. ComponentFailed: a prompt or hook
	// component failed and the step goes on without it (Detail: which, and why).
	Edited          Kind = "edited"
	ComponentFailed Kind = "component_failed"
	// Budgets: the run's ran out (it ends: reason, Detail, Result); the agent's ran out
	// (it pauses: reason); the agent's was raised (it goes on). Over.Event picks the
	// first two from the budgets' one verdict.
	RunBudgetHit   Kind = "run_budget_hit"
	AgentBudgetHit Kind = "agent_budget_hit"
	BudgetRaised   Kind = "budget_raised"
	// People and the daemon steering the agent.
	Pause  Kind = "pause"
	Resume Kind = "resume"
	Stop   Kind = "stop"
	Task   Kind = "task"
	// Rewind: a person puts the workspace back as it was before a step (Detail: which);
	// refused while a step is started (a command, a question or a helper in flight).
	Rewind Kind = "rewind"
)

// Kinds lists every event kind, in the order above.
var Kinds = []Kind{
	Think, ModelDown, InvalidReplies, Previewing,
	Proposed, ProposedRepeat, ProposedRethink, ProposedLoop,
	PolicyAllow, PolicyRefuse, Await, BoundedPreviewAsked, PreviewRerun,
	Approve, ApproveN, Deny, GiveFeedback, Answer,
	Start, StartQuestion, StartApply, WaitHelper, Succeed, Fail, Finish, ResultLost, PreviewStale,
	Recovered, RecoveredIdempotent, RecoveredLate, Withdraw, LateEnd,
	Created, ProfileWritten, InvalidReply, Removed, Edited, ComponentFailed,
	RunBudgetHit, AgentBudgetHit, BudgetRaised,
	Pause, Resume, Stop, Task, Rewind,
}

// Events lists every event the table tells apart: each kind in Kinds' order, and after
// start, start_apply, succeeded, failed, result_lost, recovered, recovered_idempotent,
// recovered_late and late_end that kind again with Writes set (a step that may change the workspace is
// checkpointed before it runs and its change recorded when it ends, or when its end is
// lost; a read-only one, a read or the bounded profile's read-only workspace, is not),
// and after succeeded, failed and late_end with Writes, with Unchecked too; and after
// budget_raised, resume and task that kind again with Mark set (an unchecked change
// waits for a person).
func Events() []Event {
	var evs []Event
	for _, k := range Kinds {
		evs = append(evs, Event{Kind: k})
		if k == BudgetRaised || k == Resume || k == Task {
			evs = append(evs, Event{Kind: k, Mark: "an unchecked change"})
		}
		switch k {
		case Start, StartApply, Succeed, Fail, ResultLost, Recovered, RecoveredIdempotent, RecoveredLate, LateEnd:
			evs = append(evs, Event{Kind: k, Writes: true})
		}
		if k == Succeed || k == Fail || k == LateEnd {
			evs = append(evs, Event{Kind: k, Writes: true, Unchecked: true})
		}
	}
	return evs
}

// Event is something that happened to an agent or its proposal.
type Event struct {
	Kind Kind
	// Reason is the agent's state reason after the event, where the event sets one.
	Reason string
	// Result is the proposal's result, for the events that end it.
	Result string
	// Detail is why its run ended, for the events that end it; what happened, for the
	// events that show the agent or report an error.
	Detail string
	// Writes says the step may change the workspace (a write, a shell or python run, a
	// clone… not a read-only command or the bounded profile's read-only workspace): on
	// Start a checkpoint is taken first, and on its end the change is recorded — on a
	// result the store lost or a restart found started too, as a change not known.
	Writes bool
	// Unchecked, on the end of a step that Writes, says what the step wrote could not be
	// checked against the agent's write-deny rules, or put back where they deny it (a
	// folder the checkpoints could not capture, an end checkpoint that failed): the
	// agent pauses for a person to look (Reason says what), and the agent is marked
	// (mark_unchecked) until a person resumes it.
	Unchecked bool
	// Mark is the agent's mark of an unchecked change no person has looked at yet
	// (api.Agent.Unchecked; the applier reads it from the agent): a start — a task, a
	// raised budget — pauses on it instead of thinking, and a resume, a person's, clears it.
	Mark string
}

// EffectKind names an effect.
type EffectKind string

// Effects. The applier in daemon/agent (apply) carries out every one, in the event's
// transaction; a cancel runs once it commits, and so does publishing the events that
// tell followers what the effects did (a decision, a result, a state, a run's end, a
// proposal shown, a question asked, the agent shown, an invalid reply or a failed
// component, a removal).
// What the loop does after an event — run the command, wait for a person — is
// NextMove's, not an effect.
const (
	SetProposal    EffectKind = "set_proposal"    // store the proposal's status (insert it when new)
	SetAgent       EffectKind = "set_agent"       // store the agent's state and reason
	EndRun         EffectKind = "end_run"         // record the run's end (Outcome, Detail)
	StartRun       EffectKind = "start_run"       // the agent begins a new run
	RecordDecision EffectKind = "record_decision" // store the decision and audit it
	RecordEpisode  EffectKind = "record_episode"  // remember what happened to the proposal
	Grant          EffectKind = "grant"           // record what the authorization did to grants: a use, or the grant y -N or y! makes
	EndGrant       EffectKind = "end_grant"       // what is left of a y -N count grant is cancelled
	Cancel         EffectKind = "cancel"          // cancel a model call in flight (Command: and a running command)
	Checkpoint     EffectKind = "checkpoint"      // checkpoint the workspace, durably, before the step runs
	RecordChange   EffectKind = "record_change"   // record what the step changed since its checkpoint
	Restore        EffectKind = "restore"         // put the workspace back as before a step, and tell the model
	ApplyPreview   EffectKind = "apply_preview"   // record that the captured change, not the command, is what runs
	DropPreview    EffectKind = "drop_preview"    // the preview's change can no longer be applied (Reason says why)
	// MarkUnchecked stores the agent's mark of an unchecked change (Reason: what the step
	// wrote that could not be checked), or clears it when Reason is empty: a person looked.
	MarkUnchecked EffectKind = "mark_unchecked"
	// NoteUnchecked notes on the proposal asked again (Reason) that the workspace is
	// unchecked, in its preview, which every front end shows with it.
	NoteUnchecked EffectKind = "note_unchecked"
	// RecordBudget records the budget that ran out and audits it; a run's also ends the
	// run's auto-approval and clears its open question.
	RecordBudget EffectKind = "record_budget"
	// ShowProposal shows the new pending proposal, with the agent, to the people following
	// it; AskPerson stores ask_user's question and puts it to them.
	ShowProposal EffectKind = "show_proposal"
	AskPerson    EffectKind = "ask_person"
	// ShowAgent shows the agent as it is now, its state unchanged, with what happened (the
	// event's Detail); ReportError tells what went wrong (Detail), the agent going on.
	ShowAgent   EffectKind = "show_agent"
	ReportError EffectKind = "report_error"
	// ShowRemoved tells the people following the agent that it was removed: their
	// streams of its events end.
	ShowRemoved EffectKind = "show_removed"
)

// Effect is one thing the event's outcome calls for.
type Effect struct {
	Kind     EffectKind
	Proposal ProposalStatus // SetProposal
	Result   *string        // SetProposal: the result to store with it, if any
	Agent    AgentState     // SetAgent
	Reason   string         // SetAgent
	Outcome  api.RunOutcome // EndRun
	Detail   string         // EndRun
	Command  bool           // Cancel: the running command too, not only a model call
}

func (e Effect) String() string {
	switch e.Kind {
	case SetProposal:
		if e.Result != nil {
			return fmt.Sprintf("proposal=%s(result)", e.Proposal)
		}
		return "proposal=" + string(e.Proposal)
	case SetAgent:
		return "agent=" + string(e.Agent)
	case EndRun:
		return "end_run(" + string(e.Outcome) + ")"
	case MarkUnchecked:
		if e.Reason == "" {
			return "mark_unchecked(cleared)"
		}
	case Cancel:
		if e.Command {
			return "cancel(model,command)"
		}
		return "cancel(model)"
	}
	return string(e.Kind)
}

// IllegalError is Next's answer to an event its state does not take.
type IllegalError struct {
	From  State
	Event Kind
}

func (e *IllegalError) Error() string {
	return fmt.Sprintf("cycle: %s cannot happen to an agent in state %s", e.Event, e.From)
}

// AgentStates lists the agent states the table covers, RunOver last.
var AgentStates = []AgentState{Thinking, AwaitingDecision, Executing, WaitingForModel, Paused, Idle, Failed, RunOver}

// OpenStatuses lists the proposal statuses a state can hold: none, or an open proposal.
var OpenStatuses = []ProposalStatus{None, Pending, Approved, Started, Interrupted}
