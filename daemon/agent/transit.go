package agent

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/daemon/agent/cycle"
	"github.com/agentd/agentd/daemon/agent/policy"
	"github.com/agentd/agentd/daemon/store"
	"github.com/agentd/agentd/internal/display"
	"github.com/agentd/agentd/internal/randid"
)

// change is one event for the applier, with what its effects need beyond the event.
type change struct {
	a  *store.Agent  // nil: the proposal's run is over (the agent is on another)
	p  *api.Proposal // nil: the agent has no open proposal
	ev cycle.Event
	// decision is what record_decision stores; auth, when set, is the authorization that
	// made it, and owner the agent whose grants it used or made (a, or its top agent):
	// grant records what it did to them.
	decision *api.Decision
	auth     *cycle.Authorization
	owner    *store.Agent
	// episode is what record_episode remembers of an event that is no decision's.
	episode *api.Episode
	// rec remembers an episode (Supervisor.recordEpisode), count reports a decision to
	// the metrics; cancel ends the agent's model call (with command, and its command)
	// once the change commits (runner.cancel, called under the runner's lock).
	rec    func(tx *store.Tx, agentID string, p *api.Proposal, ep *api.Episode) error
	count  func(tx *store.Tx, d *api.Decision)
	cancel func(command bool)
	// exhausted is what record_budget records.
	exhausted *exhausted
	// pub, when set, publishes the events of the effects once the change commits
	// (publish); shown is the agent as they show it, when the caller sets it;
	// showedState says they hold the agent's new state.
	pub         func(api.Event) api.Event
	shown       *api.Agent
	showedState bool
	// was is the agent's state and the reason it showed before the change (stateShown),
	// set by apply unless the caller set it at its transaction's start: a state event
	// that shows them unchanged says so (api.Event.Unchanged).
	was *string
	// shownProposal, when set, is the proposal as show_proposal's event shows it, read
	// when the change commits (a y! that no longer holds is noted on it meanwhile).
	shownProposal *api.Proposal
	// finishMessage, when set, is the message of the run's end: the finish command's
	// output. Without it the end says the agent's state reason.
	finishMessage *string
	// threads are the chat threads a removed agent's events went to (show_removed's
	// event carries them: the store deletes them with the agent).
	threads []*api.ChatBinding
	// messages are its proposals' chat messages still open, with their proposals (the
	// store deletes them too).
	messages []*api.ChatMessage
	// ckpt takes the workspace checkpoints (checkpoints.go); rewind is what a rewind
	// restores, and who asked.
	ckpt   *checkpoints
	rewind *rewindTo
	// rerun is the effect preview run again on the workspace as it is now, which
	// drop_preview puts in place of the stale one (nil: none could be made).
	rerun *api.Preview
}

// applied is what apply did: whether the proposal moved, the effects, and the episode it
// recorded (nil for none).
type applied struct {
	moved    bool
	effects  []cycle.Effect
	episode  *api.Episode
	question *api.Question // the question ask_person asked
	proposal *api.Proposal // the proposal show_proposal shows, as it was then
	decided  *api.Proposal // the proposal record_decision decided, as it was asked
}

// apply carries out c.ev on c.a and c.p in tx: cycle.Next says what they become and which
// effects follow, and this is the only code that carries them out — the only writer of an
// agent's state or a proposal's status. Every effect kind the table lists is done here,
// in tx; a cancel runs once tx commits, and so does publishing their events (publish, below).
// The caller writes c.a. moved is false when the
// store found c.p no longer in the status the caller read (decided or withdrawn
// meanwhile): then nothing else was written.
func apply(tx *store.Tx, c *change) (applied, error) {
	from := cycle.State{Agent: cycle.RunOver}
	if c.a != nil {
		from.Agent = c.a.State
	}
	if c.p != nil {
		from.Proposal = c.p.Status
	}
	ev := c.ev
	if c.a != nil {
		ev.Mark = c.a.Unchecked // an unchecked change no person looked at: a start pauses on it
		if c.was == nil {
			c.was = stateShown(&c.a.Agent)
		}
	}
	_, effects, err := cycle.Next(from, ev)
	if err != nil {
		return applied{}, fmt.Errorf("agent %s: %w", agentID(c.a, c.p), err)
	}
	out := applied{effects: effects}
	if c.decision != nil && c.p != nil {
		asked := *c.p // before set_proposal moves it on
		out.decided = &asked
	}
	for _, e := range effects {
		if e.Kind == cycle.SetProposal {
			if ok, err := setProposal(tx, c.p, from.Proposal, e); err != nil || !ok {
				return applied{effects: effects}, err
			}
			continue
		}
		if err := c.effect(tx, e, &out); err != nil {
			return applied{}, fmt.Errorf("agent %s: %s: %w", agentID(c.a, c.p), e.Kind, err)
		}
	}
	out.moved = true
	c.publish(tx, out)
	return out, nil
}

// setProposal stores p's new status (inserting p when it was not stored yet); false when
// the store found it no longer in status from.
func setProposal(tx *store.Tx, p *api.Proposal, from api.ProposalStatus, e cycle.Effect) (bool, error) {
	if from == cycle.None {
		p.Status = e.Proposal
		return true, tx.InsertProposal(p)
	}
	if ok, err := tx.SetProposalStatus(p.ID, e.Proposal, e.Result, from); err != nil || !ok {
		return false, err
	}
	p.Status = e.Proposal
	return true, nil
}

// effect carries out e, one effect of c other than set_proposal.
func (c *change) effect(tx *store.Tx, e cycle.Effect, out *applied) error {
	switch e.Kind {
	case cycle.SetAgent:
		c.a.State, c.a.StateReason = e.Agent, e.Reason
	case cycle.EndRun:
		return tx.EndRun(c.a.RunID, e.Outcome, e.Detail)
	case cycle.StartRun:
		return tx.StartRun(c.a.RunID, c.a.ID, c.a.Task)
	case cycle.EndGrant:
		return endGrant(tx, c.a)
	case cycle.Grant:
		return c.grant(tx)
	case cycle.RecordDecision:
		if c.decision == nil || c.count == nil {
			return errMissing
		}
		if err := tx.InsertDecision(c.decision); err != nil {
			return err
		}
		c.count(tx, c.decision)
		return tx.Audit(c.p.AgentID, "decision", c.decision)
	case cycle.RecordEpisode:
		return c.recordEpisode(tx, out)
	case cycle.RecordBudget:
		return c.recordBudget(tx)
	case cycle.Checkpoint, cycle.RecordChange, cycle.Restore:
		return c.workspace(tx, e.Kind, out)
	case cycle.Cancel:
		if c.cancel == nil {
			return errMissing
		}
		cancel, command := c.cancel, e.Command
		tx.AfterCommit(func() { cancel(command) }) // under the runner's lock, as every change of the agent is
	case cycle.MarkUnchecked:
		return c.markUnchecked(tx, e.Reason)
	case cycle.NoteUnchecked:
		if c.p == nil {
			return errMissing
		}
		return tx.NoteProposal(c.p, e.Reason)
	case cycle.ApplyPreview, cycle.DropPreview:
		return previewEffect(tx, c.p, e, c.rerun)
	case cycle.ShowProposal: // its event is all it does
		shown := *c.p
		out.proposal = &shown
	case cycle.ShowAgent, cycle.ReportError, cycle.ShowRemoved: // their events are all they do
	case cycle.AskPerson:
		if c.a == nil {
			return errMissing
		}
		out.question = &api.Question{ProposalID: c.p.ID, Text: questionText(c.p)}
		return tx.SetQuestion(c.a.ID, out.question)
	default:
		return fmt.Errorf("no applier for effect %s", e.Kind)
	}
	return nil
}

// grant records what the authorization did to grants: a use of the grant that approved,
// or the grant a person's decision made. A decision no grant approved or made does not
// change them.
func (c *change) grant(tx *store.Tx) error {
	if c.decision == nil || c.owner == nil {
		return errMissing
	}
	if c.auth == nil {
		return nil
	}
	changed, err := policy.ApplyGrant(tx, c.a, c.owner, *c.auth, c.decision)
	if err != nil || !changed || c.owner == c.a {
		return err
	}
	return tx.UpdateAgent(c.owner) // a helper drew from its top agent's grant
}

// recordEpisode remembers what happened to the proposal: the change's episode, or the
// decision's (denied, or feedback to the model).
func (c *change) recordEpisode(tx *store.Tx, out *applied) error {
	ep := c.episode
	if ep == nil && c.decision != nil {
		outcome := "feedback"
		if c.p.Status == api.ProposalDenied {
			outcome = "denied"
		}
		ep = episodeOf(c.p, outcome, "", c.decision.Feedback)
	}
	if ep == nil || c.rec == nil {
		return errMissing
	}
	out.episode = ep
	return c.rec(tx, c.p.AgentID, c.p, ep)
}

// markUnchecked carries out mark_unchecked: what the step wrote that could not be
// checked (why), named by its step, is added to the agent's mark, audited; an empty why
// is a person's resume, who looked: the mark is cleared. The caller writes c.a.
func (c *change) markUnchecked(tx *store.Tx, why string) error {
	if c.a == nil {
		return errMissing
	}
	if why == "" {
		was := c.a.Unchecked
		c.a.Unchecked = ""
		return tx.Audit(c.a.ID, "unchecked_looked", map[string]string{"unchecked": was})
	}
	if c.p != nil {
		why = fmt.Sprintf("step %d (%s) of run %s: %s", c.p.Step, c.p.Command, c.p.RunID, why)
	}
	c.a.Unchecked = display.Cut(strings.TrimPrefix(c.a.Unchecked+"; "+why, "; "), api.MaxTextBytes/4, display.Ellipsis)
	return tx.Audit(c.a.ID, "unchecked_change", map[string]string{"unchecked": why})
}

// transit is apply of an event whose effects need nothing but the store: the agent's
// state, the proposal's status, a run's start or end, a count grant's end.
func transit(tx *store.Tx, a *store.Agent, p *api.Proposal, ev cycle.Event) (moved bool, effects []cycle.Effect, err error) {
	res, err := apply(tx, &change{a: a, p: p, ev: ev})
	return res.moved, res.effects, err
}

// applyShown is apply of c, then c.a written as c left it and shown as stored — with its
// open proposal and question, read in tx — by the events the applier publishes once tx
// commits. When c's proposal did not move, nothing is written.
func applyShown(tx *store.Tx, c *change) (applied, error) {
	res, err := apply(tx, c)
	if err != nil || !res.moved {
		return res, err
	}
	if err := tx.UpdateAgent(c.a); err != nil {
		return res, err
	}
	c.shown, err = view(tx, c.a)
	return res, err
}

// newRunTx starts a new run of the idle agent a with task; the caller writes a.
func newRunTx(tx *store.Tx, a *store.Agent, task string) error {
	// Nothing of the last run may be decided in the new one: the task supersedes it.
	p, err := orNone(tx.OpenProposal(a.ID))
	if err != nil {
		return err
	}
	if err := tx.ClearQuestions(a.ID); err != nil {
		return err
	}
	a.RunID, a.Task, a.Step, a.Strikes = randid.ID("r-"), task, 0, 0
	_, _, err = transit(tx, a, p, cycle.Event{Kind: cycle.Task}) // starts the run
	return err
}

// insertAgent stores a, a new agent, and starts its first run when it has one (a.RunID
// set); taken is the error for a name another agent has.
func insertAgent(tx *store.Tx, a *store.Agent, taken error) error {
	if ok, err := tx.NameTaken(a.Name); err != nil || ok {
		return cmp.Or(err, taken)
	}
	if err := tx.InsertAgent(a); err != nil || a.RunID == "" {
		return err
	}
	if _, _, err := transit(tx, a, nil, cycle.Event{Kind: cycle.Task}); err != nil {
		return err
	}
	return tx.UpdateAgent(a)
}

// created shows a, stored in tx (and its first run started), to its followers once tx
// commits; it returns a's view.
func created(tx *store.Tx, a *store.Agent, pub func(api.Event) api.Event) (*api.Agent, error) {
	c := &change{a: a, ev: cycle.Event{Kind: cycle.Created, Detail: "created"}, pub: pub}
	_, err := applyShown(tx, c)
	return c.shown, err
}

// settles reports whether ev would change a's state or reason (with no open proposal).
func settles(a *store.Agent, ev cycle.Event) bool {
	to, eff, err := cycle.Next(cycle.State{Agent: a.State}, ev)
	return err == nil && len(eff) > 0 && (to.Agent != a.State || a.StateReason != ev.Reason)
}

// has reports whether effects hold one of kind k.
func has(effects []cycle.Effect, k cycle.EffectKind) bool {
	for _, e := range effects {
		if e.Kind == k {
			return true
		}
	}
	return false
}

func agentID(a *store.Agent, p *api.Proposal) string {
	if a != nil {
		return a.ID
	}
	return p.AgentID
}

func active(st api.AgentState) bool { return cycle.Active(st) }

// recordBudget carries out record_budget: the budget that ran out is audited; a run's
// also ends the run's auto-approval and withdraws its open question.
func (c *change) recordBudget(tx *store.Tx) error {
	ex := c.exhausted
	if ex == nil || c.a == nil {
		return errMissing
	}
	if ex.Scope == api.BudgetScopeAgent {
		return tx.Audit(c.a.ID, "agent_budget_exhausted", map[string]string{"run": ex.RunID, "budget": ex.Kind, "reason": ex.why})
	}
	if err := tx.ClearQuestions(c.a.ID); err != nil {
		return err
	}
	c.a.Policy.AutoSteps = 0
	if c.a.Policy.Mode == "auto" {
		c.a.Policy.Mode = "ask"
	}
	return tx.Audit(c.a.ID, string(api.RunBudgetExhausted), map[string]string{"run": ex.RunID, "reason": ex.why})
}

// workspace carries out the cycle's workspace effects: a checkpoint before a step, the
// change recorded at its end (told in its episode), a rewind's restore.
func (c *change) workspace(tx *store.Tx, k cycle.EffectKind, out *applied) error {
	if c.ckpt == nil {
		return errMissing
	}
	switch k {
	case cycle.Checkpoint:
		if c.a == nil || c.p == nil {
			return errMissing
		}
		return c.ckpt.before(tx, c.a, c.p)
	case cycle.RecordChange:
		if c.p == nil {
			return errMissing
		}
		line, err := c.ckpt.after(tx, c.p)
		if err == nil && c.episode != nil {
			c.episode.Result = withChange(c.episode.Result, line)
		}
		return err
	}
	if c.a == nil || c.rewind == nil || c.rec == nil {
		return errMissing
	}
	ep, err := c.ckpt.restore(tx, c.a, c.rewind, c.rec)
	out.episode = ep
	return err
}

// eventOf is the event a follower sees for an effect: an error reported, the proposal
// shown, the decision recorded, the result remembered (a rewind's too), the agent's new
// state (or the agent shown as it is), the question asked, its run's end, its removal.
// The other effects show in these.
var eventOf = map[cycle.EffectKind]api.EventType{
	cycle.ReportError:    api.EventError,
	cycle.ShowAgent:      api.EventState,
	cycle.ShowRemoved:    api.EventRemoved,
	cycle.ShowProposal:   api.EventProposal,
	cycle.RecordDecision: api.EventDecision,
	cycle.RecordEpisode:  api.EventResult,
	cycle.Restore:        api.EventResult,
	cycle.SetAgent:       api.EventState,
	cycle.AskPerson:      api.EventQuestion,
	cycle.EndRun:         api.EventFinish,
}

// publishOrder is the order a follower reads a transition's events in.
var publishOrder = []api.EventType{api.EventError, api.EventProposal, api.EventDecision, api.EventResult, api.EventState, api.EventQuestion, api.EventFinish, api.EventRemoved}

// publish has the events of the transition's effects published once tx commits (never
// when it rolls back), when the change has a publisher. The agent is shown as the caller
// last wrote it: c.shown when set, else c.a with its open proposal.
func (c *change) publish(tx *store.Tx, out applied) {
	if c.pub == nil {
		return
	}
	listed := map[api.EventType]bool{}
	for _, e := range out.effects {
		if t, ok := eventOf[e.Kind]; ok {
			listed[t] = true
		}
	}
	if listed[api.EventProposal] {
		delete(listed, api.EventState) // the proposal's event shows the agent with it
	}
	c.showedState = listed[api.EventState]
	if len(listed) == 0 {
		return
	}
	tx.AfterCommit(func() {
		for _, t := range publishOrder {
			if listed[t] && (t != api.EventProposal || c.proposalShown(out).Status != api.ProposalSuperseded) {
				c.pub(c.event(t, out))
			}
		}
	})
}

// event is the event of type t the change publishes.
func (c *change) event(t api.EventType, out applied) api.Event {
	ev := api.Event{Type: t, AgentID: agentID(c.a, c.p)}
	switch t {
	case api.EventDecision:
		ev.Decision, ev.Decided = c.decision, out.decided
		return ev
	case api.EventResult:
		ev.Episode = out.episode
		return ev
	case api.EventQuestion:
		ev.Question = out.question
		return ev
	case api.EventError:
		ev.Message = c.ev.Detail
		return ev
	case api.EventRemoved:
		ev.Threads, ev.Messages = c.threads, c.messages
	case api.EventProposal:
		ev.Proposal = c.proposalShown(out)
	}
	ev.Agent = c.shown
	if ev.Agent == nil {
		ev.Agent = viewOf(c.a, c.p, nil)
	}
	ev.Unchanged = t == api.EventState && c.was != nil && *c.was == *stateShown(ev.Agent)
	switch {
	case t == api.EventState && has(out.effects, cycle.ShowAgent):
		ev.Message = c.ev.Detail
	case t == api.EventFinish && c.finishMessage != nil:
		ev.Message = *c.finishMessage
	case t == api.EventFinish, c.exhausted != nil && c.exhausted.Scope == api.BudgetScopeAgent:
		ev.Message = ev.Agent.StateReason
	}
	if c.exhausted != nil {
		ev.Exhausted = &c.exhausted.BudgetExhausted
	}
	return ev
}

// stateShown is what a state event tells people of a: its state and the reason shown.
func stateShown(a *api.Agent) *string {
	s := string(a.State) + "|" + a.ShownReason()
	return &s
}

// proposalShown is the proposal show_proposal's event shows: the caller's, when it set
// one, else the proposal as it was shown. One superseded before the change committed (a
// schedule's run stopped on it in the same transaction) is not shown.
func (c *change) proposalShown(out applied) *api.Proposal {
	if c.shownProposal != nil {
		return c.shownProposal
	}
	return out.proposal
}
