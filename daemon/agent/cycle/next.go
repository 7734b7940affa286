package cycle

import "github.com/agentd/agentd/api"

// Next is the cycle's transition function: what an agent in state from becomes on ev,
// and the effects that follow. An event the state does not take is an *IllegalError
// naming both. Next is pure: the same state and event always give the same answer.
func Next(from State, ev Event) (State, []Effect, error) {
	t := &transition{from: from, to: from, ev: ev}
	if !t.run() {
		return from, nil, &IllegalError{From: from, Event: ev.Kind}
	}
	return t.to, t.effects, nil
}

// Active reports whether an agent in state s has a run going (a loop works for it).
func Active(s AgentState) bool {
	switch s {
	case Thinking, AwaitingDecision, Executing, WaitingForModel:
		return true
	}
	return false
}

// transition builds one answer of Next.
type transition struct {
	from, to State
	ev       Event
	effects  []Effect
}

// proposal moves the proposal to p; withResult stores the event's Result with it.
func (t *transition) proposal(p ProposalStatus, withResult bool) {
	e := Effect{Kind: SetProposal, Proposal: p}
	if withResult {
		r := t.ev.Result
		e.Result = &r
	}
	t.to.Proposal = p
	t.effects = append(t.effects, e)
}

// agent moves the agent to a with the event's reason; an agent on another run than the
// proposal's is left alone.
func (t *transition) agent(a AgentState) { t.agentFor(a, t.ev.Reason) }

// agentFor moves the agent to a with reason; an agent on another run is left alone.
func (t *transition) agentFor(a AgentState, reason string) {
	if t.from.Agent == RunOver {
		return
	}
	t.to.Agent = a
	t.effects = append(t.effects, Effect{Kind: SetAgent, Agent: a, Reason: reason})
}

// pauseMarked pauses the agent where it would start, when it holds an unchecked
// change's mark: true when it did. No person has looked at that change yet.
func (t *transition) pauseMarked() bool {
	if t.ev.Mark == "" {
		return false
	}
	t.agentFor(Paused, api.UncheckedReason(t.ev.Mark))
	return true
}

// mark records on the agent what its step wrote unchecked (the event's reason), so a
// later start pauses for a person too; an agent on another run is not the step's.
func (t *transition) mark() {
	if t.from.Agent == RunOver || !t.ev.Writes || !t.ev.Unchecked {
		return
	}
	why := t.ev.Reason
	if why == "" { // never read as a person having looked
		why = "what the step wrote could not be checked"
	}
	t.effects = append(t.effects, Effect{Kind: MarkUnchecked, Reason: why})
}

// recoveredUnchecked is what a step a restart found started and asks a person about
// again says, when it may have written: no end checkpoint held what it wrote to the
// write-deny rules.
const recoveredUnchecked = "the workspace is unchecked: what this step wrote before the daemon stopped was never held to the write-deny rules; look at it (agentctl diff) before deciding"

// lateEnd marks the agent for what a step that ended after its run wrote unchecked, and
// shows it as it is now: a person looks before it goes on, as after an end on time; a
// paused one shows why, so that nothing resumes it unlooked (a helper paused with its
// parent).
func (t *transition) lateEnd(a AgentState, act bool) {
	t.mark()
	switch {
	case (act || a == Paused) && t.ev.Writes && t.ev.Unchecked:
		t.agentFor(Paused, api.UncheckedReason(t.ev.Reason))
	case a != RunOver:
		t.effect(ShowAgent)
	}
}

func (t *transition) effect(k EffectKind) { t.effects = append(t.effects, Effect{Kind: k}) }

func (t *transition) endRun(outcome api.RunOutcome) {
	t.effects = append(t.effects, Effect{Kind: EndRun, Outcome: outcome, Detail: t.ev.Detail})
}

// run applies the event; it reports false when the state does not take it.
func (t *transition) run() bool {
	switch t.ev.Kind {
	case Think, Previewing, ModelDown, InvalidReplies, AgentBudgetHit, BudgetRaised, Pause, Resume, Stop, Task:
		return t.control()
	case Rewind:
		return t.rewind()
	case Created, ProfileWritten, InvalidReply, Removed, Edited, ComponentFailed:
		return t.shown()
	case Proposed, ProposedRepeat, ProposedRethink, ProposedLoop:
		return t.proposed()
	case PolicyAllow, PolicyRefuse, Await, BoundedPreviewAsked, PreviewRerun, Approve, ApproveN, Deny, GiveFeedback:
		return t.authorized()
	default:
		return t.executed()
	}
}

// control handles the events that steer the agent: the loop, budgets and people.
func (t *transition) control() bool {
	a, p := t.from.Agent, t.from.Proposal
	act := Active(a)
	switch t.ev.Kind {
	case Think, Previewing:
		if !act || p != None {
			return false
		}
		t.agent(Thinking)
	case ModelDown:
		if !act || p != None {
			return false
		}
		t.agent(WaitingForModel)
	case InvalidReplies:
		if !act || p != None {
			return false
		}
		t.agent(Paused)
	case AgentBudgetHit:
		if !act || p != None {
			return false
		}
		t.agent(Paused)
		t.effect(RecordBudget)
	case BudgetRaised:
		if a != Paused {
			return false
		}
		if !t.pauseMarked() {
			t.agent(Thinking)
		}
	case Pause:
		if !act {
			return false
		}
		t.agent(Paused)
		t.effects = append(t.effects, Effect{Kind: Cancel})
	case Resume:
		if a != Paused && a != Failed {
			return false
		}
		if t.ev.Mark != "" { // a person resumes it: they looked at the unchecked change
			t.effects = append(t.effects, Effect{Kind: MarkUnchecked})
		}
		t.agent(Thinking)
	case Stop:
		if a == Idle || a == RunOver {
			return false
		}
		t.supersede()
		t.agent(Idle)
		t.endRun(api.RunStopped)
		t.effects = append(t.effects, Effect{Kind: Cancel, Command: true})
	case Task:
		if a != Idle && a != Failed {
			return false
		}
		t.supersede()
		if !t.pauseMarked() {
			t.agent(Thinking)
		}
		t.effect(StartRun)
	}
	return true
}

// supersede ends an open proposal that nothing runs: the run moved on without it.
func (t *transition) supersede() {
	switch t.from.Proposal {
	case Pending, Approved, Interrupted:
		t.proposal(Superseded, false)
	}
}

// proposed handles the model's proposal: stored pending while the agent still thinks in
// its run, else superseded (kept for the record only).
func (t *transition) proposed() bool {
	if t.from.Proposal != None {
		return false // think runs only when no proposal is open
	}
	if t.from.Agent != Thinking || t.ev.Kind == ProposedRethink {
		t.proposal(Superseded, false)
		return true
	}
	t.proposal(Pending, false)
	switch t.ev.Kind {
	case ProposedRepeat:
		t.agent(AwaitingDecision)
		t.effect(EndGrant)
	case ProposedLoop:
		t.agent(Paused)
		t.effect(EndGrant)
	}
	t.effect(ShowProposal)
	return true
}

// authorized handles a verdict on a pending proposal: the policy's, or a person's decision.
func (t *transition) authorized() bool {
	a, p := t.from.Agent, t.from.Proposal
	act := Active(a)
	decidable := (p == Pending || p == Interrupted) && a != RunOver
	switch t.ev.Kind {
	case PolicyAllow:
		if !act || p != Pending {
			return false
		}
		t.proposal(Approved, false)
		t.effect(Grant) // first: a grant the decision makes is named in its record
		t.effect(RecordDecision)
	case PolicyRefuse:
		if !act || p != Pending {
			return false
		}
		t.proposal(Feedback, false)
		t.effect(RecordDecision)
		t.effect(RecordEpisode)
		t.agent(Thinking)
	case Await:
		if !act || (p != Pending && p != Interrupted && p != Started) {
			return false
		}
		t.agent(AwaitingDecision)
	case BoundedPreviewAsked: // paused too: a loop the watchdog caught is asked paused
		if a == RunOver || p != Pending {
			return false
		}
		t.effects = append(t.effects, Effect{Kind: DropPreview, Reason: t.ev.Reason})
	case PreviewRerun: // paused too: asked once resumed
		if !act && a != Paused || p != Pending {
			return false
		}
		t.effects = append(t.effects, Effect{Kind: DropPreview, Reason: t.ev.Reason})
		t.proposal(Interrupted, false)
		if act {
			t.agent(AwaitingDecision)
		}
		t.effect(ShowProposal) // its message is shown again, as it is asked now
	case Approve, ApproveN:
		if !decidable {
			return false
		}
		t.proposal(Approved, false)
		t.effect(Grant)
		t.effect(RecordDecision)
		if act {
			t.agent(Executing)
		}
	case Deny:
		if !decidable {
			return false
		}
		t.proposal(Denied, false)
		t.effect(RecordDecision)
		t.effect(RecordEpisode)
		t.agent(Idle)
		t.endRun(api.RunDenied)
	case GiveFeedback:
		if !decidable {
			return false
		}
		t.proposal(Feedback, false)
		t.effect(RecordDecision)
		t.effect(RecordEpisode)
		if act {
			t.agent(Thinking)
		}
	}
	return true
}

// executed handles an approved proposal's execution, its end, and its recovery.
func (t *transition) executed() bool {
	a, p := t.from.Agent, t.from.Proposal
	act := Active(a)
	switch t.ev.Kind {
	case Start, StartQuestion, StartApply:
		if !act || p != Approved {
			return false
		}
		if t.ev.Writes && t.ev.Kind != StartQuestion {
			t.effect(Checkpoint) // durable before the command (or its captured change) can run
		}
		t.proposal(Started, false)
		if t.ev.Kind == StartQuestion {
			t.agent(AwaitingDecision)
			t.effect(AskPerson)
			return true
		}
		t.agent(Executing)
		if t.ev.Kind == StartApply {
			t.effect(ApplyPreview)
		}
		return true
	case WaitHelper:
		if !act || p != Started {
			return false
		}
		t.agent(Executing)
		return true
	case ResultLost:
		if !act || p != Started {
			return false
		}
		t.recordChange() // what it changed is not known: recorded so
		t.proposal(Interrupted, false)
		t.agent(AwaitingDecision)
		return true
	case RunBudgetHit:
		if !act {
			return false
		}
		if p == Started {
			t.proposal(ProposalFail, true)
		}
		t.supersede()
		t.agent(Idle)
		t.endRun(api.RunBudgetExhausted)
		t.effect(RecordBudget)
		return true
	case LateEnd:
		if p != None {
			return false
		}
		t.recordChange() // first: the episode tells the change
		t.effect(RecordEpisode)
		t.lateEnd(a, act)
		return true
	}
	if p != Started {
		return false
	}
	return t.ended(a, act)
}

// ended handles the end of a started proposal: its result, a restart that found it
// started, or its withdrawal.
// recordChange records the change of a step that may have written.
func (t *transition) recordChange() {
	if t.ev.Writes {
		t.effect(RecordChange)
	}
}

func (t *transition) ended(a AgentState, act bool) bool {
	switch t.ev.Kind {
	case Answer:
		if a == RunOver {
			return false
		}
		t.proposal(Succeeded, true)
		t.effect(RecordEpisode)
		if act {
			t.agent(Thinking)
		}
	case Succeed, Fail:
		status := Succeeded
		if t.ev.Kind == Fail {
			status = ProposalFail
		}
		t.recordChange() // first: the episode tells the change
		t.proposal(status, true)
		t.effect(RecordEpisode)
		t.mark()
		switch {
		case (act || a == Paused) && t.ev.Writes && t.ev.Unchecked: // a person looks before it goes on
			t.agentFor(Paused, api.UncheckedReason(t.ev.Reason))
		case a == Executing:
			t.agent(Thinking)
		}
	case Finish:
		t.proposal(Succeeded, true)
		t.effect(RecordEpisode)
		if a != RunOver {
			t.agent(Idle)
			t.endRun(api.RunFinished)
		}
	case Recovered, RecoveredIdempotent:
		t.recordChange() // what it changed before the restart is not known: recorded so
		switch {
		case !act: // its run was stopped or replaced while it ran: record it, ask no one
			t.proposal(ProposalFail, true)
		case t.ev.Kind == RecoveredIdempotent:
			t.proposal(Approved, false) // the loop starts it again (NextMove)
			// What it wrote was never checked: a person looks before it runs again, as
			// after an unchecked end.
			t.ev.Unchecked = t.ev.Writes
			t.mark()
			if t.ev.Writes {
				t.agentFor(Paused, api.UncheckedReason(t.ev.Reason))
			}
		default:
			t.proposal(Interrupted, false)
			t.agent(AwaitingDecision)
			if t.ev.Writes { // the person asked is told what it may have written was never checked
				t.effects = append(t.effects, Effect{Kind: NoteUnchecked, Reason: recoveredUnchecked})
			}
		}
	case RecoveredLate:
		t.recordChange()
		t.proposal(ProposalFail, true)
		t.ev.Unchecked = t.ev.Writes // no end checkpoint: what it wrote was never checked
		t.lateEnd(a, act)
	case PreviewStale:
		t.effects = append(t.effects, Effect{Kind: DropPreview, Reason: t.ev.Reason})
		if !act {
			t.proposal(ProposalFail, true)
			break
		}
		t.proposal(Interrupted, false)
		t.agent(AwaitingDecision)
		t.effect(ShowProposal) // its message is shown again, as it is asked now
	case Withdraw:
		t.proposal(ProposalFail, true)
	default:
		return false
	}
	return true
}

// rewind handles a person putting the workspace back as before a step: any state but
// one with a step in flight, whose command (or helper) could write beside the restore.
// The agent's state stays; the model is told on its next step.
func (t *transition) rewind() bool {
	if t.from.Agent == RunOver || t.from.Proposal == Started {
		return false
	}
	t.effect(Restore)
	return true
}

// shown handles what is only shown to the people following the agent: a new agent (idle,
// or thinking on its first task); the profile its first step wrote, an invalid reply the
// model gave and a component that failed, which may land after a person paused or
// stopped it meanwhile; a person's edit and its removal, whatever it was doing.
func (t *transition) shown() bool {
	a, p := t.from.Agent, t.from.Proposal
	switch {
	case a == RunOver:
		return false
	case t.ev.Kind == Created && (p != None || (a != Idle && a != Thinking)):
		return false
	case t.ev.Kind == InvalidReply, t.ev.Kind == ComponentFailed:
		t.effect(ReportError)
	case t.ev.Kind == Removed:
		t.effect(ShowRemoved)
	default:
		t.effect(ShowAgent)
	}
	return true
}
