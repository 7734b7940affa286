package agent

import (
	"context"
	"errors"
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
		if m.Then == cycle.RunAhead && !r.askOnPersonRerun(ctx, l, f) {
			m.Then = cycle.EndLoop // a pause cut it short: the resume's kick runs it again
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
			r.think(r.priority(ctx, true), l)
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
		if b := r.s.budgets.agentBudget(f.a); b.MaxWall > 0 {
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
// the verdicts of its budgets (one, budgets.over's) and helpers. A pending proposal is left unweighed.
func readRound(s *Supervisor, tx *store.Tx, id string) (*facts, error) {
	a, err := tx.Agent(id)
	if err != nil {
		return nil, err
	}
	f := &facts{Round: cycle.Round{Agent: a.State}, a: a}
	if !active(a.State) && a.State != api.StatePaused {
		return f, nil
	}
	p, err := tx.OpenProposal(a.ID)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	if !active(a.State) { // paused: only a preview to run again in a person's profile moves it
		if p != nil && awaitsRerun(p) {
			f.p, f.Proposal, f.Rerun = p, p.Status, true
		}
		return f, nil
	}
	f.Over = s.budgets.over(a)
	if p == nil {
		return f, nil
	}
	f.p, f.Proposal, f.Question, f.Rerun = p, p.Status, p.Command == commands.AskUser, awaitsRerun(p)
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

// priority puts the class of the agent's next step's model calls in ctx: batch for a
// run the daemon started (or a helper of one), unless a person has just decided,
// answered or given feedback — then they are waiting for that step, which goes first
// (consume true takes their turn; false leaves it for the next step, as a command's own
// model calls, such as a web page's summary, run before it). The agent is the key batch
// calls take turns by.
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
