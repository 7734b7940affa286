package agent

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/daemon/agent/cycle"
	"github.com/agentd/agentd/daemon/llm"
	"github.com/agentd/agentd/daemon/store"
)

// loop goes round the agent's cycle until no loop works for it: each round reads what
// holds, asks cycle.NextMove what comes next, and does that.
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
		m, f, err := r.next(ctx)
		if rounded != nil {
			rounded()
			rounded = nil
		}
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, store.ErrNotFound) {
				return // ending, or deleted
			}
			r.s.log.Error("agent loop", "agent", r.id, "err", err)
			if !r.sleep(ctx, time.Second) {
				return
			}
			continue
		}
		switch m.Then {
		case cycle.EndLoop:
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
		case cycle.AskModel:
			done := r.armBusyBudget(ctx)
			r.think(r.modelPriority(ctx), l)
			done()
		case cycle.Weigh, cycle.RunIt:
			done := r.armBusyBudget(ctx)
			if r.execute(r.priority(ctx, false), l, f.p) { // model calls of commands (web summaries)
				m.Then = cycle.Wait // the policy left it to a person
			}
			done()
		case cycle.Again:
			if f.Over != nil && m.Event == f.Over.Event() {
				r.endOverBudget(ctx, f.a.RunID, f.Over)
			}
		}
		if m.Then == cycle.Wait {
			select {
			case <-r.wake:
			case <-ctx.Done():
				return
			}
		}
	}
}

// facts is what a round read: the cycle's Round, and what the runner needs to act on it.
type facts struct {
	cycle.Round
	a *store.Agent
	p *api.Proposal // the open proposal; nil for none
}

// next reads the round's facts and asks cycle.NextMove what comes next. It only reads,
// except to apply an event that changes no more than the agent's state (await,
// result_lost, wait_helper); weighing a pending proposal and starting an approved one
// are writes execute makes, with the policy's verdict computed there once.
func (r *runner) next(ctx context.Context) (cycle.Move, *facts, error) {
	r.mu.Lock()
	var f *facts
	err := r.s.st.View(ctx, func(tx *store.Tx) (err error) {
		f, err = readRound(r.s, tx, r.id)
		return err
	})
	if err != nil {
		r.mu.Unlock()
		return cycle.Move{}, nil, err
	}
	if active(f.a.State) {
		r.runID = f.a.RunID
	}
	m := cycle.NextMove(f.Round)
	r.busyLeft = 0
	switch m.Then {
	case cycle.AskModel, cycle.Weigh, cycle.RunIt:
		// A step that begins over the budget (only an approved command can: a model
		// step is checked before) is not cut; the agent pauses after it.
		if b := r.s.agentBudgets.agentBudget(f.a); b.MaxWall > 0 {
			r.busyLeft = max(b.MaxWall-time.Duration(f.a.BusyMS)*time.Millisecond, 0)
		}
	}
	r.mu.Unlock()
	switch m.Event {
	case cycle.Await, cycle.ResultLost, cycle.WaitHelper:
		err = r.setState(ctx, f, m.Event) // it checks that nothing moved since f was read
	}
	return m, f, err
}

// readRound reads the round's facts of agent id in tx: the agent, its open proposal, and
// the verdicts of its budgets (one, overBudget's) and helpers. A pending proposal is left unweighed.
func readRound(s *Supervisor, tx *store.Tx, id string) (*facts, error) {
	a, err := tx.Agent(id)
	if err != nil {
		return nil, err
	}
	f := &facts{Round: cycle.Round{Agent: a.State}, a: a}
	if !active(a.State) {
		return f, nil
	}
	f.Over = overBudget(s, a)
	p, err := tx.OpenProposal(a.ID)
	if errors.Is(err, store.ErrNotFound) {
		return f, nil
	} else if err != nil {
		return nil, err
	}
	f.p, f.Proposal, f.Question = p, p.Status, p.Command == commands.AskUser
	if p.Status == api.ProposalStarted && !f.Question {
		// With one loop per agent nothing else executes: a started command here waits
		// for a helper (whose end kicks it), or lost its result (the store refused it).
		if _, err := tx.WaitFor(p.ID); err == nil {
			f.Helping = true
		} else if !errors.Is(err, store.ErrNotFound) {
			return nil, err
		}
	}
	return f, nil
}

// setState applies ev, an event that moves only the agent's state (and a lost result's
// proposal); the applier publishes the agent's new state. With f, the round that chose ev, it
// does nothing when the agent changed since; without, when the agent is not active or
// ev would not change it.
func (r *runner) setState(ctx context.Context, f *facts, k cycle.Kind, reason ...string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.s.st.Tx(ctx, func(tx *store.Tx) error {
		cur, err := tx.Agent(r.id)
		if err != nil {
			return err
		}
		ev := cycle.Event{Kind: k, Reason: strings.Join(reason, "")}
		var p *api.Proposal
		switch {
		case f == nil && (!active(cur.State) || !settles(cur, ev)):
			return nil
		case f != nil:
			if p, err = tx.OpenProposal(cur.ID); err != nil && !errors.Is(err, store.ErrNotFound) {
				return err
			}
			if cur.State != f.a.State || p == nil || p.ID != f.p.ID || p.Status != f.p.Status {
				return nil // changed meanwhile: the next round sees it
			}
			ev = settleEvent(cur, p, k)
		}
		c := &change{a: cur, p: p, ev: ev, pub: r.s.events.Publish}
		if res, err := apply(tx, c); err != nil || !res.moved {
			return err
		}
		if k == cycle.ResultLost {
			r.s.audit.keep(tx, cur.ID, "interrupted", map[string]string{"proposal": p.ID, "command": p.Command})
		}
		if err := tx.UpdateAgent(cur); err != nil {
			return err
		}
		c.shown, err = view(tx, cur) // the applier publishes the new state once this commits
		return err
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

// modelPriority puts the class of the agent's next step's model calls in ctx: batch for
// a run the daemon started (or a helper of one), unless a person has just decided,
// answered or given feedback — then they are waiting for that step, which goes first.
// The agent is the key batch calls take turns by.
func (r *runner) modelPriority(ctx context.Context) context.Context { return r.priority(ctx, true) }

// priority is modelPriority; consume false leaves a person's turn for the next step (a
// command's own model calls, such as a web page's summary, run before it).
func (r *runner) priority(ctx context.Context, consume bool) context.Context {
	r.mu.Lock()
	runID, person := r.runID, r.personNext
	if consume {
		r.personNext = false
	}
	r.mu.Unlock()
	class := llm.Interactive
	if !person {
		class = r.s.batchRuns.class(runID, func(id string) bool { return personWaits(r.s, id) })
	}
	return llm.WithPriority(ctx, class, r.id)
}

// personWaits reports whether a person has just decided, answered or given feedback to
// agent id and waits for its next step: a helper it started then works for that person.
func personWaits(s *Supervisor, id string) bool {
	s.mu.Lock()
	r := s.runners[id]
	s.mu.Unlock()
	if r == nil {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.personNext
}

// summarize starts making one-line summaries of older episodes that the prompt shows
// without one, when the agent's call budget allows: at most once every summaryEvery steps
// of its loop, one job at a time. The job runs beside the step, not in it, so a step never
// waits for a summary call (a person deciding, or the next step's model call, overlaps
// it). Its summaries and the call's tokens are stored with the agent's next change
// (storeWith: a proposal, a result, a decision, a run's end), not in a transaction of
// their own that a step under way would wait behind (agentd has one store connection);
// when no step is under way, at once. They show from the prompt after that. ctx is the
// loop's: pausing or stopping the agent, or the daemon shutting down, ends the job.
func (r *runner) summarize(ctx context.Context, l *live, a *store.Agent) {
	r.thinks++
	if r.thinks-r.summarizedAt < summaryEvery {
		return
	}
	r.summarizedAt = r.thinks // checked again summaryEvery steps from now, whatever comes of it
	if !r.summarizing.CompareAndSwap(false, true) {
		return
	}
	r.s.wg.Go(func() {
		defer r.summarizing.Store(false)
		r.s.episodeHistory.makeSummaries(ctx, l, a.ID)
		// Stored now unless a step of its is under way, whose proposal or result will.
		r.s.episodeHistory.storeSummaries(context.WithoutCancel(ctx), &r.mu, r.id)
	})
}
