package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/commands/permission"
	"github.com/agentd/agentd/daemon/agent/cycle"
	"github.com/agentd/agentd/daemon/effect"
	"github.com/agentd/agentd/daemon/store"
	"github.com/agentd/agentd/internal/backoff"
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
	// thinks counts this loop's model steps; summarizedAt is the count at the last
	// summary call (history.go spaces them out).
	thinks, summarizedAt int
	summarizing          atomic.Bool // a summary job of this loop is running
	// busyLeft is what the agent's own time budget leaves for the step next() chose (0:
	// no bound); busyCut is set (under mu) when that ran out mid-step: the step is cancelled.
	busyLeft  time.Duration
	busyCut   atomic.Bool
	modelTurn // whose turn the next model call is (priority.go); guarded by mu
	// observed are the watchdog's observations of the latest episodes (watchdog.go);
	// guarded by mu.
	observed observedSteps
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

// cancel cancels a model call in flight and, with command, a running command: the
// applier's cancel effect. Caller holds r.mu.
func (r *runner) cancel(command bool) {
	if command {
		r.cancelAll()
		return
	}
	r.cancelThinking()
}

// sleep waits d, or less when woken; it reports false when ctx ended.
func (r *runner) sleep(ctx context.Context, d time.Duration) bool {
	return backoff.SleepOr(ctx, d, r.wake, nil)
}

// errNotApproved stops an execution whose proposal is no longer approved or approvable.
var errNotApproved = errors.New("proposal not approved")

// execute runs an approved proposal with a write-ahead record: approved → started →
// succeeded|failed. ask_user stops at started: the question waits for its answer. A
// pending proposal is weighed first, in the same transaction; it reports true when the
// policy leaves it to a person, and the loop waits.
func (r *runner) execute(ctx context.Context, l *live, p *api.Proposal) (waits bool) {
	var st started
	r.mu.Lock()
	r.s.checkpointAhead(ctx, l, p) // the walk holds no store writer
	err := r.s.st.Tx(ctx, func(tx *store.Tx) error {
		st, waits = started{}, false // a retried transaction starts over
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
		err = startTx(r.s, l, tx, a, p, prev, r.s.specIn(ctx, l, tx, a, p.Command), &st)
		if errors.Is(err, errNotApproved) && st.ask {
			waits = true
			if moved, err := awaitTx(r.s, tx, a, p); err != nil || !moved {
				return err
			}
		} else if err != nil {
			return err
		}
		return tx.UpdateAgent(a)
	})
	if err == nil && !waits {
		r.armExec(ctx, &st)
	}
	r.mu.Unlock()
	switch {
	case errors.Is(err, errNotApproved):
		return false // decided otherwise meanwhile; the next round sees it
	case err != nil:
		r.s.log.Error("starting command", "agent", r.id, "proposal", p.ID, "err", err)
		r.sleep(ctx, time.Second)
		return false
	case waits:
		return true
	}
	r.run(ctx, l, p, &st)
	return false
}

// checkpointAhead is checkpoints.ahead of p's start, whose command is looked up as the
// start does (a bounded profile's read-only run counts as writing: one checkpoint too
// many costs little). Called under the runner's lock.
func (s *Supervisor) checkpointAhead(ctx context.Context, l *live, p *api.Proposal) {
	s.checkpoints.ahead(ctx, s.st, p, func(tx *store.Tx, a *store.Agent) bool {
		return s.checkpoints.writes(s.specIn(ctx, l, tx, a, p.Command), commands.Profile{})
	})
}

// awaitTx moves a, whose pending proposal p the policy leaves to a person, to await the
// decision when it does not yet (cycle.NextMove's await); the applier publishes a's new
// state once tx commits. It reports whether a moved.
func awaitTx(s *Supervisor, tx *store.Tx, a *store.Agent, p *api.Proposal) (bool, error) {
	m := cycle.NextMove(cycle.Round{Agent: a.State, Proposal: p.Status, Verdict: cycle.Ask})
	if m.Event == cycle.NoEvent {
		return false, nil
	}
	c := &change{a: a, p: p, ev: cycle.Event{Kind: m.Event, Reason: a.StateReason}, pub: s.events.Publish}
	_, err := apply(tx, c)
	return err == nil, err
}

// started is what startTx recorded, for the execution that follows it.
type started struct {
	a       *store.Agent
	decided *api.Decision    // the policy's approval, when it made one
	q       *api.Question    // set for ask_user: the question now waits for its answer
	refused *api.Episode     // set when a deny pattern refused the proposal: nothing runs
	unbound string           // set when it asks although a y! names it: why the y! does not hold
	ask     bool             // set when the policy leaves the pending proposal to a person
	cmds    commands.Set     // the step's commands when think just built them; nil: look them up
	profile commands.Profile // how far a sandboxed command's programs reach
	apply   bool             // the step applies the change the proposal's effect preview captured
	execCtx context.Context
	cancel  context.CancelFunc
}

// startTx moves p to started in tx — recording the policy's verdict first when p is
// still pending — and sets a's state to match; the caller writes a. prev is the proposal
// before p in its run, needed only when p is pending. It fails with errNotApproved when
// p is neither approved nor approvable by the policy.
func startTx(s *Supervisor, l *live, tx *store.Tx, a *store.Agent, p *api.Proposal, prev *api.Proposal, spec *commands.Spec, st *started) error {
	st.a = a
	if p.Status == api.ProposalPending {
		// Decided by policy: the decision and the start land together.
		au, owner, err := authorize(l, tx, a, p, prev, spec, nil)
		if err != nil {
			return err
		}
		if au.Verdict == cycle.Ask {
			st.unbound, st.ask = au.Unbound, true
			return errNotApproved
		}
		st.decided = au.Decision
		ev := cycle.Event{Kind: cycle.NextMove(cycle.Round{Agent: a.State, Proposal: p.Status, Verdict: au.Verdict}).Event}
		c := &change{a: a, p: p, ev: ev, decision: au.Decision, auth: &au, owner: owner, pub: s.events.Publish}
		if st.refused, err = s.decisions.decideTx(tx, c); errors.Is(err, errMoved) {
			return errNotApproved // a person decided it meanwhile; the next round sees it
		} else if err != nil {
			return err
		}
		if st.refused != nil {
			c.shown = known(a, nil, nil)
			return nil
		}
	}
	if spec != nil && permission.Sandboxed(spec.Name) {
		var err error
		if st.profile, err = sandboxProfile(l, tx, a, st.decided); err != nil {
			return err
		}
	}
	start := cycle.NextMove(cycle.Round{Agent: a.State, Proposal: p.Status, Question: p.Command == commands.AskUser,
		Previewed: previewed(p, st.profile)})
	ev := cycle.Event{Kind: start.Event, Writes: s.checkpoints.writes(spec, st.profile)}
	c := &change{a: a, p: p, ev: ev, ckpt: s.checkpoints, pub: s.events.Publish}
	res, err := apply(tx, c)
	if err != nil || !res.moved {
		if err == nil {
			err = errNotApproved
		}
		return err
	}
	st.apply = has(res.effects, cycle.ApplyPreview)
	if err := tx.Audit(a.ID, "started", map[string]string{"proposal": p.ID, "command": p.Command}); err != nil {
		return err
	}
	st.q = res.question           // ask_user's, which waits for its answer
	c.shown = known(a, nil, st.q) // p is the open proposal and it is started: nothing to decide
	return nil
}

// armExec makes the started command cancellable by pause and stop. Caller holds r.mu.
func (r *runner) armExec(ctx context.Context, st *started) {
	if st.q == nil && st.refused == nil {
		st.execCtx, st.cancel = context.WithCancel(ctx)
		r.cancelExec = st.cancel
		if r.busyCut.Load() { // the time budget ran out before the command began
			st.cancel()
		}
	}
}

// run runs the command of a start that startTx recorded (the applier published it) and
// records its outcome. An ask_user question was only asked: its answer comes from a
// person; a proposal the policy refused does not run.
func (r *runner) run(ctx context.Context, l *live, p *api.Proposal, st *started) {
	if st.refused != nil || st.q != nil {
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
			Helpers: helperEnv{s: r.s.helpers, parentID: st.a.ID, proposalID: p.ID}, Profile: st.profile}
		watched, stopWatch := r.s.budgets.watchDisk(st.execCtx, st.a, st.cancel)
		if st.apply {
			o.Output, o.Err = applyPreview(watched, r.s.previews, st.a, p)
		} else {
			o.Output, o.Err = commands.Run(watched, cmd, env, p.Args, l.commandLimits())
		}
		diskCut := stopWatch()
		if errors.Is(o.Err, effect.ErrStale) {
			r.finishExecution(ctx, p, staleEnd(p, o.Err, rerunPreview(st.execCtx, r.s.st, r.s.previews, r.s.budgets.previewRoom(st.a), l, st.a, p, cmd)), time.Since(began))
			return
		}
		switch {
		case o.Err != nil && r.busyCut.Load():
			o.Err = fmt.Errorf("cut off: the agent's time budget ran out while it ran (%w)", o.Err)
		case o.Err != nil && diskCut != "":
			o.Err = fmt.Errorf("cut off: %s (%w)", diskCut, o.Err)
		}
		disk = r.s.budgets.diskAfter(st.a, cmd.Spec().Class)
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

// previewed reports whether approving p applies its effect preview: it captured a
// change, in the very profile p runs in now (a change made by code a bounded profile
// keeps from loading is never applied under it), and that profile may write the
// workspace (a bounded read-only approval runs the command, which can then change nothing).
func previewed(p *api.Proposal, prof commands.Profile) bool {
	return p.Preview != nil && p.Preview.Effect.Appliable() && p.Preview.Effect.Profile == profileName(prof) && (!prof.Bounded || prof.Write)
}

// profileName is prof's name as a decision records it (api.Decision.Profile).
func profileName(prof commands.Profile) string {
	switch {
	case !prof.Bounded:
		return ""
	case prof.Write:
		return api.ProfileBoundedWrite
	}
	return api.ProfileBounded
}

// applyPreview puts p's captured change in place in a's workspace: the step's output,
// or an error wrapping effect.ErrStale when the workspace changed since the preview.
func applyPreview(ctx context.Context, previews *effect.Previews, a *store.Agent, p *api.Proposal) (string, error) {
	if previews == nil {
		return "", errors.New("effect previews are off: the captured change cannot be applied")
	}
	return previews.Apply(ctx, a.ID, a.Workspace, p.Preview.Effect)
}

// update runs fn on the agent, read in one transaction, under the runner's lock.
func (r *runner) update(ctx context.Context, fn func(tx *store.Tx, a *store.Agent) error) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.s.st.Tx(ctx, func(tx *store.Tx) error {
		a, err := tx.Agent(r.id)
		if err != nil {
			return err
		}
		return fn(tx, a)
	})
}

// setState applies ev, an event that moves only the agent's state (and a lost result's
// proposal); the applier publishes the agent's new state. With f, the round that chose ev, it
// does nothing when the agent changed since; without, when the agent is not active or
// ev would not change it.
func (r *runner) setState(ctx context.Context, f *facts, k cycle.Kind, reason ...string) error {
	return r.update(ctx, func(tx *store.Tx, cur *store.Agent) (err error) {
		ev := cycle.Event{Kind: k, Reason: strings.Join(reason, "")}
		var p *api.Proposal
		switch {
		case f == nil && (!active(cur.State) || !settles(cur, ev)):
			return nil
		case f != nil:
			if p, err = orNone(tx.OpenProposal(cur.ID)); err != nil {
				return err
			}
			if cur.State != f.a.State || p == nil || p.ID != f.p.ID || p.Status != f.p.Status {
				return nil // changed meanwhile: the next round sees it
			}
			ev = settleEvent(cur, p, k)
			ev.Writes = k == cycle.ResultLost && r.s.checkpoints.took(tx, p) // its change is recorded as not known
		}
		// The applier publishes the new state once this commits.
		if res, err := applyShown(tx, &change{a: cur, p: p, ev: ev, pub: r.s.events.Publish, ckpt: r.s.checkpoints}); err != nil || !res.moved {
			return err
		}
		if k == cycle.ResultLost {
			r.s.audit.keep(tx, cur.ID, "interrupted", map[string]string{"proposal": p.ID, "command": p.Command})
		}
		return nil
	})
}

// settleEvent is the event a round's state-only move k makes, with the reason a shows.
func settleEvent(a *store.Agent, p *api.Proposal, k cycle.Kind) cycle.Event {
	switch k {
	case cycle.ResultLost:
		return cycle.Event{Kind: k, Reason: "the result of " + p.Command + " could not be recorded; it may or may not have run: decide again"}
	case cycle.WaitHelper:
		return cycle.Event{Kind: k, Reason: "waiting for a helper agent"}
	}
	return cycle.Event{Kind: k, Reason: a.StateReason}
}
