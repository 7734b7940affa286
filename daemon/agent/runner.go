package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/commands/permission"
	"github.com/agentd/agentd/daemon/agent/cycle"
	"github.com/agentd/agentd/daemon/store"
)

// runner drives one agent's cycle. Its loop reads the stored state, does the one thing that
// state calls for, and writes the outcome back; it holds nothing the store does not.
type runner struct {
	s    *Supervisor
	id   string
	wake chan struct{}

	// mu serializes this agent's state transitions between the loop and API calls.
	// It is never held across a model call or a command execution.
	mu      sync.Mutex
	running bool // guarded by s.mu
	// rounded, if set (under s.mu, before the loop starts), is called once the loop's
	// first round has chosen its action: kickAwaiting paces starts with it.
	rounded    func()
	cancelStep context.CancelFunc
	cancelExec context.CancelFunc

	// smartNext makes the next proposal come from the smart model (after the watchdog
	// caught a loop); smartNote tells it which.
	smartNext bool
	smartNote string
	// waitAttempt counts retries while the model server is unavailable.
	waitAttempt int
	// overRun, overBudget and overWhy are the run whose budget next() found used up
	// (or, for actAgentBudget, the agent's), which budget, and why.
	overRun, overBudget, overWhy string
	// thinks counts this loop's model steps; summarizedAt is the count at the last
	// summary call (history.go spaces them out).
	thinks, summarizedAt int
	summarizing          atomic.Bool // a summary job of this loop is running
	// busyLeft is what the agent's own time budget leaves for the step next() chose (0:
	// no bound); busyCut is set when that ran out mid-step and the step was cancelled.
	busyLeft  time.Duration
	busyCut   atomic.Bool
	modelTurn // whose turn the next model call is (priority.go); guarded by mu
	// observed are the watchdog's observations of the latest episodes (watchdog.go);
	// guarded by mu.
	observed observedSteps
}

func newRunner(s *Supervisor, id string) *runner {
	return &runner{s: s, id: id, wake: make(chan struct{}, 1)}
}

func (r *runner) wakeUp() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// cancelThinking cancels a model call in flight. Caller holds r.mu.
func (r *runner) cancelThinking() {
	if r.cancelStep != nil {
		r.cancelStep()
	}
}

// cancelAll cancels a model call and a running command. Caller holds r.mu.
func (r *runner) cancelAll() {
	r.cancelThinking()
	if r.cancelExec != nil {
		r.cancelExec()
	}
}

type action int

const (
	actStop action = iota
	actWait
	actThink
	actExecute
	actExhaust     // a budget of the run ran out: end it
	actAgentBudget // the agent's own budget ran out: pause it
)

func (r *runner) loop(ctx context.Context) {
	stopped := false     // running was cleared under s.mu on the way out: a new loop may own it now
	rounded := r.rounded // set before this loop started; no other loop runs until it ends
	r.rounded = nil
	defer func() {
		if rounded != nil {
			rounded()
		}
		if !stopped {
			r.s.mu.Lock()
			r.running = false
			r.s.mu.Unlock()
		}
	}()
	for ctx.Err() == nil {
		// One settings generation per round: a reload meanwhile applies from the next round.
		l := r.s.live()
		act, p, err := r.next(ctx, l)
		if rounded != nil {
			rounded()
			rounded = nil
		}
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			if errors.Is(err, store.ErrNotFound) {
				return // deleted
			}
			r.s.log.Error("agent loop", "agent", r.id, "err", err)
			if !r.sleep(ctx, time.Second) {
				return
			}
			continue
		}
		switch act {
		case actStop:
			// kick wakes us under s.mu; checking for a wake-up under it too means a task
			// given just as this loop decided to stop is never left without a loop.
			r.s.mu.Lock()
			select {
			case <-r.wake:
				r.s.mu.Unlock()
				continue
			default:
			}
			r.running, stopped = false, true
			r.s.mu.Unlock()
			return
		case actWait:
			select {
			case <-r.wake:
			case <-ctx.Done():
				return
			}
		case actThink:
			done := r.armBusyBudget(ctx)
			r.think(r.modelPriority(ctx), l)
			done()
		case actExecute:
			done := r.armBusyBudget(ctx)
			r.execute(r.priority(ctx, false), l, p) // model calls of commands (web summaries)
			done()
		case actExhaust:
			r.exhaust(ctx, r.overRun, r.overBudget, r.overWhy)
		case actAgentBudget:
			r.pauseOverBudget(ctx, r.overBudget, r.overWhy)
		}
	}
}

// sleep waits d, or less when woken; it reports false when ctx ended.
func (r *runner) sleep(ctx context.Context, d time.Duration) bool {
	return sleepUntil(ctx, d, r.wake, nil)
}

// sleepUntil waits d, or less when wake sends or done closes (either may be nil); it
// reports false when ctx ended.
func sleepUntil(ctx context.Context, d time.Duration, wake <-chan struct{}, done <-chan struct{}) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-wake:
	case <-done:
	case <-ctx.Done():
		return false
	}
	return true
}

// next decides the loop's next action from the stored state. It only reads, except to
// show awaiting_decision; a policy's approval is recorded by execute, in the same
// transaction that starts the command.
func (r *runner) next(ctx context.Context, l *live) (action, *api.Proposal, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var act action
	var prop *api.Proposal
	var a *store.Agent
	lost, helping := false, false
	err := r.s.st.View(ctx, func(tx *store.Tx) error {
		act, prop = actStop, nil
		var err error
		if a, err = tx.Agent(r.id); err != nil || !active(a.State) {
			return err
		}
		r.runID = a.RunID
		b := r.s.runBudgets.budgetOf(a.RunID)
		if b != nil {
			if r.overWhy = b.overTime(time.Now()); r.overWhy != "" {
				act, r.overRun, r.overBudget = actExhaust, a.RunID, "time"
				return nil
			}
		}
		p, err := tx.OpenProposal(a.ID)
		if errors.Is(err, store.ErrNotFound) {
			act = actThink
			if b != nil {
				if r.overBudget, r.overWhy = b.overCount(a); r.overWhy != "" {
					act, r.overRun = actExhaust, a.RunID
					return nil
				}
			}
			if r.overBudget, r.overWhy = r.s.agentBudgets.agentOver(a); r.overWhy != "" {
				act = actAgentBudget
			}
			return nil
		} else if err != nil {
			return err
		}
		prop, act = p, actWait
		switch p.Status {
		case api.ProposalApproved:
			act = actExecute
		case api.ProposalPending:
			prev, err := tx.ProposalBefore(p)
			if err != nil {
				return err
			}
			spec := r.s.specIn(ctx, l, tx, a, p.Command)
			if au, _, err := authorize(l, tx, a, p, prev, spec, nil); err != nil {
				return err
			} else if au.Verdict != cycle.Ask {
				act = actExecute // execute records the verdict with the start
			}
		case api.ProposalStarted:
			// With one loop per agent nothing else executes: a started command here lost
			// its result (the store refused the write); an ask_user question waits, and
			// so does a command waiting for a helper — with no loop: the helper's end
			// kicks it.
			if p.Command == commands.AskUser {
				break
			}
			if _, err := tx.WaitFor(p.ID); err == nil {
				act, helping = actStop, a.State != api.StateExecuting
				return nil
			} else if !errors.Is(err, store.ErrNotFound) {
				return err
			}
			lost = true
		}
		return nil
	})
	r.busyLeft = 0
	if err == nil && (act == actThink || act == actExecute) {
		// A step that begins over the budget (only an approved command can: a model
		// step is checked before) is not cut; the agent pauses after it.
		if b := r.s.agentBudgets.agentBudget(a); b.MaxWall > 0 {
			r.busyLeft = max(b.MaxWall-time.Duration(a.BusyMS)*time.Millisecond, 0)
		}
	}
	want := api.StateAwaitingDecision
	if helping {
		// Resumed while its helper works: it is still executing that command.
		act, want = actWait, api.StateExecuting
	}
	if err != nil || act != actWait || (a.State == want && !lost) {
		return act, prop, err
	}
	var v *api.Agent
	err = r.s.st.Tx(ctx, func(tx *store.Tx) error {
		cur, err := tx.Agent(r.id)
		if err != nil || cur.State != a.State {
			return err // changed meanwhile: the next round sees it
		}
		ev := cycle.Event{Kind: cycle.Await, Reason: cur.StateReason}
		switch {
		case lost:
			ev = cycle.Event{Kind: cycle.ResultLost, Reason: "the result of " + prop.Command + " could not be recorded; it may or may not have run: decide again"}
		case helping:
			ev = cycle.Event{Kind: cycle.WaitHelper, Reason: "waiting for a helper agent"}
		}
		if moved, _, err := transit(tx, cur, prop, ev); err != nil || !moved {
			return err
		}
		if lost {
			r.s.audit.keep(tx, cur.ID, "interrupted", map[string]string{"proposal": prop.ID, "command": prop.Command})
		}
		if err := tx.UpdateAgent(cur); err != nil {
			return err
		}
		v, err = view(tx, cur)
		return err
	})
	if err == nil && v != nil {
		r.s.events.Publish(api.Event{Type: api.EventState, AgentID: r.id, Agent: v})
	}
	if helping {
		act = actStop
	}
	return act, prop, err
}

// Hash is the proposal hash: sha256 over the command name and its canonical args.
func Hash(command string, canonicalArgs []byte) string {
	h := sha256.New()
	h.Write([]byte(command))
	h.Write([]byte{0})
	h.Write(canonicalArgs)
	return hex.EncodeToString(h.Sum(nil))
}

// setState moves the agent on ev (think, model_down) if it is still active and that
// changes it, and publishes the change.
func (r *runner) setState(ctx context.Context, ev cycle.Event) {
	r.mu.Lock()
	var v *api.Agent
	err := r.s.st.Tx(ctx, func(tx *store.Tx) error {
		a, err := tx.Agent(r.id)
		if err != nil {
			return err
		}
		if !active(a.State) || !settles(a, ev) {
			return nil
		}
		if _, _, err := transit(tx, a, nil, ev); err != nil {
			return err
		}
		if err := tx.UpdateAgent(a); err != nil {
			return err
		}
		v, err = view(tx, a)
		return err
	})
	if err == nil && v != nil {
		r.s.events.Publish(api.Event{Type: api.EventState, AgentID: r.id, Agent: v})
	}
	r.mu.Unlock()
}

// errNotApproved stops an execution whose proposal is no longer approved or approvable.
var errNotApproved = errors.New("proposal not approved")

// execute runs an approved proposal with a write-ahead record: approved → started →
// succeeded|failed. ask_user stops at started: the question waits for its answer.
func (r *runner) execute(ctx context.Context, l *live, p *api.Proposal) {
	var st started
	r.mu.Lock()
	err := r.s.st.Tx(ctx, func(tx *store.Tx) error {
		a, err := tx.Agent(r.id)
		if err != nil {
			return err
		}
		if !active(a.State) {
			return errNotApproved // paused or stopped since next() looked
		}
		var prev *api.Proposal
		if p.Status == api.ProposalPending {
			if prev, err = tx.ProposalBefore(p); err != nil {
				return err
			}
		}
		if err := r.startTx(l, tx, a, p, prev, r.s.specIn(ctx, l, tx, a, p.Command), &st); err != nil {
			return err
		}
		return tx.UpdateAgent(a)
	})
	if err == nil {
		r.armExec(ctx, &st)
	}
	r.mu.Unlock()
	if errors.Is(err, errNotApproved) {
		return // decided otherwise meanwhile; the next round sees it
	}
	if err != nil {
		r.s.log.Error("starting command", "agent", r.id, "proposal", p.ID, "err", err)
		r.sleep(ctx, time.Second)
		return
	}
	r.run(ctx, l, p, &st)
}

// started is what startTx recorded, for the events and the execution that follow it.
type started struct {
	a       *store.Agent
	decided *api.Decision    // the policy's approval, when it made one
	q       *api.Question    // set for ask_user: the question now waits for its answer
	refused *api.Episode     // set when a deny pattern refused the proposal: nothing runs
	unbound string           // set when it asks although a y! names it: why the y! does not hold
	cmds    commands.Set     // the step's commands when think just built them; nil: look them up
	profile commands.Profile // how far a sandboxed command's programs reach
	v       *api.Agent
	execCtx context.Context
	cancel  context.CancelFunc
}

// startTx moves p to started in tx — recording the policy's verdict first when p is
// still pending — and sets a's state to match; the caller writes a. prev is the proposal
// before p in its run, needed only when p is pending. It fails with errNotApproved when
// p is neither approved nor approvable by the policy.
func (r *runner) startTx(l *live, tx *store.Tx, a *store.Agent, p *api.Proposal, prev *api.Proposal, spec *commands.Spec, st *started) error {
	st.a = a
	if p.Status == api.ProposalPending {
		// Decided by policy: the decision and the start land together.
		au, owner, err := authorize(l, tx, a, p, prev, spec, nil)
		if err != nil {
			return err
		}
		if au.Verdict == cycle.Ask {
			st.unbound = au.Unbound
			return errNotApproved
		}
		if changed, err := applyGrant(tx, a, owner, au, au.Decision); err != nil {
			return err
		} else if changed && owner != a {
			if err := tx.UpdateAgent(owner); err != nil { // a helper drew from its top agent's grant
				return err
			}
		}
		st.decided = au.Decision
		ev := cycle.Event{Kind: cycle.PolicyAllow}
		if au.Verdict == cycle.Refuse {
			ev.Kind = cycle.PolicyRefuse // not run: the reason goes to the model as feedback
		}
		if st.refused, err = r.s.decisions.decideTx(tx, a, p, st.decided, ev); errors.Is(err, errMoved) {
			return errNotApproved // a person decided it meanwhile; the next round sees it
		} else if err != nil {
			return err
		}
		if st.refused != nil {
			st.v = known(a, nil, nil)
			return nil
		}
	}
	if spec != nil && permission.Sandboxed(spec.Name) {
		if err := sandboxProfile(l, tx, a, st); err != nil {
			return err
		}
	}
	ev := cycle.Event{Kind: cycle.Start}
	if p.Command == commands.AskUser {
		ev.Kind = cycle.StartQuestion
	}
	if moved, _, err := transit(tx, a, p, ev); err != nil || !moved {
		if err == nil {
			err = errNotApproved
		}
		return err
	}
	if err := tx.Audit(a.ID, "started", map[string]string{"proposal": p.ID, "command": p.Command}); err != nil {
		return err
	}
	if p.Command == commands.AskUser {
		st.q = &api.Question{ProposalID: p.ID, Text: questionText(p)}
		if err := tx.SetQuestion(a.ID, st.q); err != nil {
			return err
		}
	}
	st.v = known(a, nil, st.q) // p is the open proposal and it is started: nothing to decide
	return nil
}

// sandboxProfile sets how far the programs of a's sandboxed command reach: bounded when
// the policy approved it unasked (st.decided says how), and never to a path a's deny rules
// keep from the file commands.
func sandboxProfile(l *live, tx *store.Tx, a *store.Agent, st *started) error {
	layers, err := layersFor(l, tx, a)
	if err != nil {
		return err
	}
	if d := permission.Denied(layers...); d != nil {
		st.profile.Paths = d
	}
	if st.decided != nil && st.decided.Profile != "" {
		st.profile.Bounded = true
		st.profile.Write = st.decided.Profile == api.ProfileBoundedWrite
	}
	return nil
}

// armExec makes the started command cancellable by pause and stop. Caller holds r.mu.
func (r *runner) armExec(ctx context.Context, st *started) {
	if st.q == nil && st.refused == nil {
		st.execCtx, st.cancel = context.WithCancel(ctx)
		r.cancelExec = st.cancel
	}
}

// run publishes a start that startTx recorded, then runs the command and records its
// outcome. An ask_user question only gets published: its answer comes from a person.
func (r *runner) run(ctx context.Context, l *live, p *api.Proposal, st *started) {
	if st.decided != nil {
		r.s.events.Publish(api.Event{Type: api.EventDecision, AgentID: r.id, Decision: st.decided})
	}
	if st.refused != nil {
		r.s.events.Publish(api.Event{Type: api.EventResult, AgentID: r.id, Episode: st.refused})
	}
	r.s.events.Publish(api.Event{Type: api.EventState, AgentID: r.id, Agent: st.v})
	if st.refused != nil {
		return
	}
	if st.q != nil {
		r.s.events.Publish(api.Event{Type: api.EventQuestion, AgentID: r.id, Question: st.q})
		return
	}
	defer st.cancel()

	step := r.s.stepOf(st.a)
	o := commands.Outcome{Command: p.Command, Args: p.Args}
	began := time.Now()
	if st.cmds == nil {
		st.cmds = r.s.commandsFor(st.execCtx, l, st.a, step)
	}
	disk := int64(-1) // not measured
	if cmd, ok := st.cmds.Get(p.Command); !ok {
		o.Err = fmt.Errorf("command %q is not available to this agent now", p.Command)
	} else {
		env := commands.Env{Workspace: st.a.Workspace, AgentID: st.a.ID, State: step.State, Memory: r.s.memoryService.commandMemory(),
			Helpers: helperEnv{s: r.s, parentID: st.a.ID, proposalID: p.ID}, Profile: st.profile}
		stopWatch := r.s.agentBudgets.watchDisk(st.a, st.cancel)
		o.Output, o.Err = commands.Run(st.execCtx, cmd, env, p.Args, l.Limits)
		diskCut := stopWatch()
		switch {
		case o.Err != nil && r.busyCut.Load():
			o.Err = fmt.Errorf("cut off: the agent's time budget ran out while it ran (%w)", o.Err)
		case o.Err != nil && diskCut != "":
			o.Err = fmt.Errorf("cut off: %s (%w)", diskCut, o.Err)
		}
		disk = r.s.agentBudgets.diskAfter(st.a, cmd.Spec().Class)
	}
	if ctx.Err() != nil {
		// The daemon is shutting down: leave the proposal started so the next start
		// treats it as interrupted rather than guessing its outcome.
		return
	}
	if o.Err == nil {
		r.s.metrics.Command(p.Command, "succeeded", time.Since(began))
	} else if !errors.Is(o.Err, commands.ErrAwaiting) {
		r.s.metrics.Command(p.Command, "failed", time.Since(began))
	}
	if errors.Is(o.Err, commands.ErrAwaiting) {
		// A helper works on it: the proposal stays started, and the helper's end is
		// recorded as its result (deliverHelper). Nothing to record now.
		r.mu.Lock()
		r.cancelExec = nil
		r.mu.Unlock()
		return
	}
	pl := l.pipelineFor(st.a.Name)
	if end := endOf(p, o.Output, o.Err); !end.finished && pl.Has(memoryName) {
		// The next prompt's memory search runs while the result is recorded (a component
		// that changes the output below makes it a miss, nothing worse).
		r.s.memoryService.searchAhead(ctx, r.s.episodeHistory, r.id, step.Task, l.HistoryEpisodes, end.ep)
	}
	var staged stagedWrites // the components' store writes, committed with the result
	pl.Executed(withStagedWrites(ctx, &staged), step, &o)
	end := endOf(p, o.Output, o.Err)
	end.disk = disk
	r.finishExecution(ctx, p, end, time.Since(began), staged.fns...)
}

func questionText(p *api.Proposal) string {
	var args struct {
		Question string `json:"question"`
	}
	_ = json.Unmarshal(p.Args, &args) // validated when proposed
	if args.Question == "" {
		return "(the agent asked an empty question)"
	}
	return args.Question
}
