package agent

// What changes a run in progress: pausing, resuming, stopping, a new task, the end of a
// run. Every change goes through mutate, under the agent's runner lock.

import (
	"context"
	"errors"
	"strings"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/daemon/agent/cycle"
	"github.com/agentd/agentd/daemon/agent/policy"
	"github.com/agentd/agentd/daemon/run"
	"github.com/agentd/agentd/daemon/store"
)

// mutate runs fn on the agent under its runner's lock in one transaction, then has the
// applier show the agent's new state (edited) and wakes its loop. first, when set, runs
// before, under the runner's lock: work too long to hold the store's writer for (a
// rewind's restore). shows, when set, is a change fn had the applier make (transit.go
// publish): its events are published, showing the agent as the mutation wrote it; when
// they hold its new state, that is the state event, and no edited event follows. Events
// are published under the agent's lock, so followers see them in the order of the
// commits, and before the loop is woken, so a decision is never shown after its result.
func (s *runs) mutate(ctx context.Context, ref string, first func(id string) error, fn func(tx *store.Tx, a *store.Agent, r *runner) error, shows *change) (*api.Agent, error) {
	id, err := onAgent(ctx, s.st.View, ref, func(_ *store.Tx, a *store.Agent) (string, error) { return a.ID, nil })
	if err != nil {
		return nil, err
	}
	if shows != nil {
		shows.pub = s.events.Publish
	}
	r := s.host.runner(id)
	r.mu.Lock()
	if first != nil {
		if err := first(id); err != nil {
			r.mu.Unlock()
			return nil, err
		}
	}
	var out *api.Agent
	err = s.st.Tx(ctx, func(tx *store.Tx) error {
		a, err := tx.Agent(id)
		if errors.Is(err, store.ErrNotFound) {
			return notFound("no agent %q: see `agentctl ls`", ref)
		} else if err != nil {
			return err
		}
		was := stateShown(&a.Agent) // before fn: what it changes through the cycle is news
		if shows != nil {
			shows.was = was
		}
		if err := fn(tx, a, r); err != nil {
			return err
		}
		s.history.storeWith(tx, a)
		edited := &change{a: a, ev: cycle.Event{Kind: cycle.Edited}, was: was}
		if shows == nil || !shows.showedState {
			edited.pub = s.events.Publish // else shows' state event shows it
		}
		_, err = applyShown(tx, edited)
		if out = edited.shown; shows != nil {
			shows.shown = out
		}
		return err
	})
	r.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if active(out.State) {
		s.host.kick(id)
	}
	return out, nil
}

// Pause stops an agent after its current command; a model call in flight is cancelled.
// Its helpers (theirs too) pause with it: they work for the run that paused.
func (s *runs) Pause(ctx context.Context, ref string) (*api.Agent, error) {
	out, err := s.pause(ctx, ref, "paused by a person")
	if err == nil {
		s.helpers.pauseHelpers(ctx, out.ID, out.Name)
	}
	return out, err
}

// pause is Pause of the agent alone, with the reason it shows.
func (s *runs) pause(ctx context.Context, ref, reason string) (*api.Agent, error) {
	shows := &change{}
	return s.mutate(ctx, ref, nil, func(tx *store.Tx, a *store.Agent, r *runner) error {
		if !active(a.State) {
			return conflict("agent %s is %s, not running: nothing to pause", a.Name, a.State)
		}
		shows.a, shows.ev, shows.cancel = a, cycle.Event{Kind: cycle.Pause, Reason: reason}, r.cancel
		if _, err := apply(tx, shows); err != nil {
			return err
		}
		return tx.Audit(a.ID, "paused", map[string]string{"reason": reason})
	}, shows)
}

// Resume continues a paused or failed agent where it stopped, with the helpers that
// were paused because it was.
func (s *runs) Resume(ctx context.Context, ref string) (*api.Agent, error) {
	out, err := s.resume(ctx, ref, "")
	if err == nil {
		s.helpers.resumeHelpers(ctx, out.ID, out.Name)
	}
	return out, err
}

// resume is Resume of the agent alone; with only set, only an agent paused for that
// reason is resumed.
func (s *runs) resume(ctx context.Context, ref, only string) (*api.Agent, error) {
	s.remeasure(ctx, ref) // files removed to get under the disk budget count
	shows := &change{}
	return s.mutate(ctx, ref, nil, func(tx *store.Tx, a *store.Agent, r *runner) error {
		if only != "" && (a.State != api.StatePaused || a.StateReason != only) {
			return conflict("agent %s is %s (%s), not paused with its parent", a.Name, a.State, a.StateReason)
		}
		if a.State != api.StatePaused && a.State != api.StateFailed {
			return conflict("agent %s is %s, not paused", a.Name, a.State)
		}
		if a.RunID == "" || a.Task == "" {
			return conflict("agent %s has no run to resume: give it a task with `agentctl task`", a.Name)
		}
		if _, why := s.budgets.agentOver(a); why != "" {
			return conflict("agent %s is over its budget: %s", a.Name, why)
		}
		shows.a, shows.ev = a, cycle.Event{Kind: cycle.Resume}
		if _, err := apply(tx, shows); err != nil {
			return err
		}
		a.Strikes = 0
		return tx.Audit(a.ID, "resumed", nil)
	}, shows)
}

// Stop ends the current run: an open proposal is superseded, a question withdrawn and a
// running command cancelled. The agent stays, idle, with its history. Its followers are
// told the run ended (EventFinish, with the reason), as for any other end.
func (s *runs) Stop(ctx context.Context, ref string) (*api.Agent, error) {
	return s.stop(ctx, ref, "stopped by a person")
}

// stop is Stop, with the reason the run ends for.
func (s *runs) stop(ctx context.Context, ref, reason string) (*api.Agent, error) {
	var runID string
	shows := &change{}
	out, err := s.mutate(ctx, ref, nil, func(tx *store.Tx, a *store.Agent, r *runner) error {
		if a.State == api.StateIdle {
			return conflict("agent %s is idle already", a.Name)
		}
		p, err := orNone(tx.OpenProposal(a.ID))
		if err != nil {
			return err
		}
		if p != nil && p.Status == api.ProposalStarted {
			// A question, or a proposal waiting for a helper, has no execution to cancel:
			// withdraw it (the helper is stopped once this run's end is recorded).
			withdraw := p.Command == commands.AskUser
			if !withdraw {
				if withdraw, err = tx.DeleteWait(p.ID); err != nil {
					return err
				}
			}
			if withdraw {
				if _, _, err := transit(tx, a, p, cycle.Event{Kind: cycle.Withdraw, Result: "withdrawn: the run was stopped"}); err != nil {
					return err
				}
			}
		}
		if err := tx.ClearQuestions(a.ID); err != nil {
			return err
		}
		// An open proposal not started is superseded; the run ends; what runs is cancelled.
		shows.a, shows.p, shows.ev, shows.cancel = a, p, cycle.Event{Kind: cycle.Stop, Reason: reason, Detail: reason}, r.cancel
		if _, err := apply(tx, shows); err != nil {
			return err
		}
		a.Policy.AutoSteps = 0
		runID = a.RunID
		return tx.Audit(a.ID, "stopped", nil)
	}, shows)
	if err == nil {
		s.runEnded(runID)
	}
	return out, err
}

// Task gives an idle agent a follow-up task; its history carries over into the new run.
func (s *runs) Task(ctx context.Context, ref string, task string) (*api.Agent, error) {
	return s.task(ctx, ref, task, nil, false)
}

// TaskRun is Task as the API asks for it: with a budget, when set, for the new run.
func (s *runs) TaskRun(ctx context.Context, ref string, req api.TaskRequest) (*api.Agent, error) {
	opt, err := requestOptions(req.Budget)
	if err != nil {
		return nil, err
	}
	return s.task(ctx, ref, req.Task, opt, false)
}

// task is Task; opt, when set, applies to the new run; batch marks its model calls as
// batch work (priority.go).
func (s *runs) task(ctx context.Context, ref string, task string, opt *run.Options, batch bool) (*api.Agent, error) {
	var pats []string
	if opt != nil {
		var err error
		if pats, err = checkRunOptions(opt); err != nil {
			return nil, err
		}
	}
	var runID, batchID string
	task = strings.TrimSpace(task)
	if task == "" {
		return nil, badRequest("empty task")
	}
	s.remeasure(ctx, ref)
	if len(task) > api.MaxTextBytes {
		return nil, badRequest("task is %d bytes: at most %d; shorten it, or put the details in a file in the workspace", len(task), api.MaxTextBytes)
	}
	out, err := s.mutate(ctx, ref, nil, func(tx *store.Tx, a *store.Agent, r *runner) error {
		if a.State != api.StateIdle && a.State != api.StateFailed {
			return conflict("agent %s is %s: stop it first (`agentctl stop %s`) or wait until it is idle", a.Name, a.State, a.Name)
		}
		// Refused now rather than accepted and paused before its first step.
		if _, why := s.budgets.agentOver(a); why != "" {
			return conflict("agent %s is over its budget, so it cannot take a task: %s", a.Name, why)
		}
		if err := newRunTx(tx, a, task); err != nil {
			return err
		}
		if batch { // before the commit wakes the loop
			batchID = a.RunID
			s.batchRuns.mark(batchID)
		}
		if opt != nil {
			if opt.Policy != nil {
				a.Policy = *opt.Policy
			}
			if err := s.applyRunOptions(tx, a, opt, pats); err != nil {
				return err
			}
			if opt.Policy != nil {
				if err := policy.GrantAutoSteps(tx, a, opt.By, opt.Source); err != nil {
					return err
				}
			}
			// Cached before the commit: the loop, woken after it, must see the budget.
			runID = a.RunID
			s.budgets.setBudget(a.RunID, a.ID, opt.Budget, tx.Now(), a.PromptTokens+a.EvalTokens)
		}
		return tx.Audit(a.ID, "task", map[string]string{"task": task, "run": a.RunID})
	}, nil)
	if err != nil && runID != "" {
		s.budgets.dropBudget(runID)
	}
	if err != nil && batchID != "" {
		s.batchRuns.drop(batchID)
	}
	return out, err
}

// timeUp interrupts a run out of wall time: a model call or a command in flight is
// cancelled, and the loop, woken, ends the run.
func (s *runs) timeUp(runID string) {
	b := s.budgets.budgetOf(runID)
	if b == nil {
		return
	}
	r := s.host.runner(b.agentID)
	r.mu.Lock()
	r.cancelAll()
	r.mu.Unlock()
	s.host.kick(b.agentID)
}

// runEnded forgets an ended run's budget and tells Options.OnRunEnd how it ended.
// Called after the end is committed, holding no lock.
func (s *runs) runEnded(runID string) {
	s.budgets.dropBudget(runID)
	s.batchRuns.drop(runID)
	if runID == "" {
		return
	}
	ctx := context.Background()
	var ended *store.Run
	err := s.st.View(ctx, func(tx *store.Tx) (err error) { ended, err = tx.Run(runID); return err })
	if err != nil {
		s.log.Warn("reading an ended run", "run", runID, "err", err)
		return
	}
	// A parent waiting for this run gets its end; this run's own helpers stop.
	s.helpers.deliverHelper(ctx, runID, nil, "")
	s.helpers.stopHelpers(ctx, ended.AgentID)
	if s.onRunEnd == nil {
		return
	}
	s.onRunEnd(run.End{RunID: ended.ID, AgentID: ended.AgentID, Outcome: ended.Outcome, Reason: ended.Reason, Steps: ended.Steps, Tokens: ended.Tokens})
}

// StartTask gives an idle agent a task, like Task, with a budget, a policy and patterns
// for the run. It returns the agent with its new RunID.
func (s *runs) StartTask(ctx context.Context, ref, task string, opt run.Options) (*api.Agent, error) {
	return s.task(ctx, ref, task, &opt, true)
}

// CreateAgent creates an agent from a task (the model writes its profile on its first step)
// or from a name, description and goals, and starts its run.
func (s *runs) CreateAgent(ctx context.Context, req api.CreateAgentRequest) (*api.Agent, error) {
	opt, err := requestOptions(req.Budget)
	if err != nil {
		return nil, err
	}
	return s.createAgent(ctx, req, opt, false)
}

// CreateRun creates an agent, like CreateAgent, and starts its run with opt. req must
// start a run (a task or goals, Start not false).
func (s *runs) CreateRun(ctx context.Context, req api.CreateAgentRequest, opt run.Options) (*api.Agent, error) {
	return s.createAgent(ctx, req, &opt, true)
}

// remeasure measures agent ref's workspace again, when it has a disk budget that its
// stored usage is over, its last walk failed or none was made since the daemon started:
// files may have been removed or made readable since (by a person, before they resume
// it). It stores what it found.
func (s *runs) remeasure(ctx context.Context, ref string) {
	var id, ws string
	s.st.View(ctx, func(tx *store.Tx) error {
		a, err := resolve(tx, ref)
		if err != nil {
			return err
		}
		_, walked := s.budgets.walks.get(a.ID)
		budget := s.budgets.agentBudget(a).MaxDisk
		if overDisk(a, budget) != "" || s.budgets.unmeasured(a) != "" || budget > 0 && !walked {
			id, ws = a.ID, a.Workspace
		}
		return nil
	})
	if id == "" {
		return
	}
	used, _ := commands.FSUsed(ws)
	n, err := s.budgets.measureDisk(id, ws, used)
	if err != nil {
		return
	}
	if err := s.st.Tx(ctx, func(tx *store.Tx) error { return tx.SetDiskBytes(id, n) }); err != nil {
		s.log.Warn("agent: recording its disk usage", "agent", id, "err", err)
	}
}
