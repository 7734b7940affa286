// Package agent runs agents: the supervisor that hosts them and the cycle each one repeats —
// build the prompt, ask the model for exactly one command, persist the proposal, get it
// authorized, execute it with a write-ahead record, remember the episode.
//
// Every transition is a store transaction, and the loop decides what to do next from the
// stored state alone, so an agent picks up where it was after a restart or a kill -9.
// What a transition does is the cycle package's answer (cycle.Next, cycle.NextMove,
// cycle.Authorize); apply, in transit.go, is the one place that carries it out, and it
// publishes the events its effects make once the transaction commits. The applier
// (transit.go, effects.go) needs nothing above the store, so every part sits on it. Budgets of both scopes, a run's and an agent's, give one verdict per
// round (budget.go) that the cycle turns into its scope's event.
// The Supervisor hosts the agents; its parts, split by responsibility (runs, decisions,
// helpers, memory, budgets, doctor, views…), serve the local API. Each holds only what it
// needs, handed to it by wireParts in supervisor.go as values and funcs, and
// Supervisor.API (api.go) hands them out by name. How a proposal is authorized is the
// policy package's (daemon/agent/policy), handed the settings in use; what configures
// the supervisor, every value from the config, is in settings.go.
package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/daemon/agent/cycle"
	"github.com/agentd/agentd/daemon/effect"
	"github.com/agentd/agentd/daemon/llm"
	"github.com/agentd/agentd/daemon/run"
	"github.com/agentd/agentd/daemon/store"
)

// Supervisor hosts every agent. It owns the agents' runners, the settings and the model's
// state; the local API's methods are its parts', reached through API().Runs, .Views,
// .Memory… rather than promoted, so no type, the Supervisor included, grows into a god type.
type Supervisor struct {
	memoryService  *memoryService  // long-term memory and its endpoints (memory_service.go)
	policyService  *policyService  // the policy endpoints (policy_service.go)
	auditLog       *auditLog       // the audit log and replays (audit.go)
	doctor         *doctor         // agentctl doctor (doctor.go)
	compFailures   compFailures    // each component's last failure, for doctor (components.go)
	budgets        *budgets        // runs' and agents' budgets, and their one verdict (budget.go)
	batchRuns      *batchRuns      // the runs whose model calls queue as batch work (priority.go)
	decisions      *decisions      // people's decisions and answers (decide.go)
	helpers        *helpers        // helper agents kept in step with their parents (helpers.go)
	runs           *runs           // runs started, changed and ended (service.go, run_control.go)
	agentViews     *agentViews     // the read-only views: status, agents, history (views.go)
	workspaceDirs  *workspaceDirs  // where agents' workspaces are (workspaces.go)
	stepCounters   *stepCounters   // steps and decisions counted for metrics (metrics.go)
	episodeHistory *episodeHistory // the prompt's view of each agent's episodes (history.go)
	checkpoints    *checkpoints    // each agent's workspace checkpoints (checkpoints.go)
	rewinds        *rewinds        // agentctl diff and rewind (rewind.go)
	// recordEpisode remembers a finished step, in the transaction that ends it (remember.go).
	recordEpisode func(tx *store.Tx, agentID string, p *api.Proposal, ep *api.Episode) error

	// previews are the effect previews of shell and python proposals; nil without a state dir.
	previews *effect.Previews

	opt    Options
	st     *store.Store
	log    *slog.Logger
	events *run.Broker

	// cur is the settings generation in use (settings.go); Reload swaps it.
	cur     atomic.Pointer[live]
	reprobe chan struct{} // wakes the probe loop after the model changed

	mu      sync.Mutex
	runners map[string]*runner
	ctx     context.Context // the daemon's root context; runners live under it
	wg      sync.WaitGroup

	model modelState
	mem   *memState // nil: no long-term memory

	audit   auditKeeper // audit lines that must not fail their transaction (audit_keep.go)
	metrics Metrics     // never nil
}

// New checks opt and returns a Supervisor; call Start to resume agents.
func New(opt Options) (*Supervisor, error) {
	if opt.Store == nil || opt.LLM == nil {
		return nil, errors.New("agent: Store and LLM are required")
	}
	if opt.Model == "" {
		return nil, errors.New("agent: no model configured")
	}
	if opt.Log == nil {
		opt.Log = slog.New(slog.DiscardHandler)
	}
	if opt.Backoff == nil {
		opt.Backoff = llm.NextBackoff
	}
	s := &Supervisor{
		opt: opt, st: opt.Store, log: opt.Log, events: run.NewBroker(),
		runners: map[string]*runner{},
		mem:     newMemState(opt.Memory), reprobe: make(chan struct{}, 1), metrics: opt.Metrics,
	}
	if s.metrics == nil {
		s.metrics = noMetrics{}
	}
	wireParts(s, opt)
	l, err := s.build(opt.Settings)
	if err != nil {
		return nil, err
	}
	s.cur.Store(l)
	s.model.switchTo(l.Model, l.SmartModel)
	opt.LLM.SetLimits(l.limits())
	return s, nil
}

// wireParts builds the supervisor's parts, each with the few dependencies it needs. The
// parts reach back to the supervisor only through the narrow interfaces they declare.
func wireParts(s *Supervisor, opt Options) {
	s.audit.log = opt.Log
	s.model.pool = opt.LLM.PoolStatus
	s.workspaceDirs = &workspaceDirs{st: s.st, log: s.log, configured: opt.WorkspaceRoot, stateDir: opt.StateDir}
	if opt.StateDir != "" {
		_, root := s.workspaceDirs.workspaceRoots()
		s.previews = effect.New(effect.Options{Dir: filepath.Join(opt.StateDir, "previews"), Views: filepath.Join(root, ".previews")})
	}
	s.stepCounters = &stepCounters{metrics: s.metrics}
	s.episodeHistory = &episodeHistory{st: s.st, log: s.log, llm: opt.LLM}
	s.memoryService = &memoryService{st: s.st, log: s.log, mem: s.mem, spawn: s.spawn}
	s.recordEpisode = episodeRecorder{history: s.episodeHistory, counters: s.stepCounters, memory: s.memoryService}.record
	s.policyService = &policyService{commandSource: s, st: s.st, live: s.live, kick: s.kick, checkpointsOn: func() bool { return s.checkpoints.on() }}
	s.auditLog = &auditLog{st: s.st}
	s.checkpoints = &checkpoints{opt: opt.Checkpoints, rules: func(tx *store.Tx, a *store.Agent) (commands.PathRules, error) { return deniedRules(s.live(), tx, a) }}
	if s.checkpoints.opt.Dir = ""; opt.Checkpoints.On && opt.StateDir != "" {
		s.checkpoints.opt.Dir = filepath.Join(opt.StateDir, "checkpoints")
	}
	s.doctor = &doctor{llm: opt.LLM, st: s.st, live: s.live, stateDir: opt.StateDir, workspaceOf: s.workspaceDirs.workspace,
		checks: append(slices.Clip(opt.HealthChecks), s.checkpoints.doctorCheck, s.compFailures.doctorCheck)}
	s.batchRuns = &batchRuns{}
	s.helpers = &helpers{recordEpisode: s.recordEpisode, st: s.st, log: s.log, audit: &s.audit, checkpoints: s.checkpoints,
		events: s.events, batchRuns: s.batchRuns, maxDepth: opt.MaxHelperDepth, maxHelpers: opt.MaxHelpers, kick: s.kick}
	s.budgets = &budgets{st: s.st, base: opt.AgentConfig.Budget(), overrides: opt.Agents, byRun: map[string]*runBudget{}}
	s.runs = &runs{
		host: s, workspaces: s.workspaceDirs, st: s.st, log: s.log, events: s.events, onRunEnd: opt.OnRunEnd, onRemoved: s.checkpoints.removed(opt.OnAgentRemoved),
		budgets: s.budgets, batchRuns: s.batchRuns, helpers: s.helpers, memory: s.memoryService,
		history: s.episodeHistory, previews: s.previews,
	}
	s.budgets.timeUp, s.budgets.remeasure = s.runs.timeUp, s.runs.remeasure
	s.budgets.mutateAgent = func(ctx context.Context, ref string, fn func(*store.Tx, *store.Agent) error) (*api.Agent, error) {
		return s.runs.mutate(ctx, ref, nil, func(tx *store.Tx, a *store.Agent, _ *runner) error { return fn(tx, a) }, nil)
	}
	// The helpers and rewinds change an agent under its runner's lock without touching it.
	mutate := func(ctx context.Context, ref string, first func(string) error, fn func(*store.Tx, *store.Agent) error, shows *change) (*api.Agent, error) {
		return s.runs.mutate(ctx, ref, first, func(tx *store.Tx, a *store.Agent, _ *runner) error { return fn(tx, a) }, shows)
	}
	s.helpers.mutate, s.helpers.pause, s.helpers.resume, s.helpers.stop, s.helpers.deleteAgent = mutate, s.runs.pause, s.runs.resume, s.runs.stop, s.runs.DeleteAgent
	// A person decides or answers: the agent's next step is theirs to wait on (personNext).
	personAnswers := func(ctx context.Context, ref string, fn func(*store.Tx, *store.Agent) error, shows *change) (*api.Agent, error) {
		return s.runs.mutate(ctx, ref, nil, func(tx *store.Tx, a *store.Agent, r *runner) error {
			r.personNext = true
			return fn(tx, a)
		}, shows)
	}
	s.rewinds = &rewinds{ckpt: s.checkpoints, st: s.st, recordEpisode: s.recordEpisode, mutate: mutate}
	s.decisions = &decisions{st: s.st, live: s.live, mutateThen: personAnswers, recordEpisode: s.recordEpisode,
		runEnded: s.runs.runEnded, countDecision: s.stepCounters.countDecision, specIn: s.specIn}
	s.agentViews = &agentViews{
		st: s.st, events: s.events, budgets: s.budgets, model: &s.model,
		version: opt.Version, stateDir: opt.StateDir, started: time.Now(), mem: s.mem,
		freshen: s.freshen, fresh: statusFresh,
	}
}

// dropRunner forgets a removed agent's runner.
func (s *Supervisor) dropRunner(id string) {
	s.mu.Lock()
	delete(s.runners, id)
	s.mu.Unlock()
}

// Start recovers from a crash (proposals found started are marked interrupted, or re-run
// when idempotent), probes the model in the background and resumes every active agent.
// Agents run until ctx ends; Wait waits for them.
func (s *Supervisor) Start(ctx context.Context) error {
	s.mu.Lock()
	s.ctx = ctx
	s.mu.Unlock()
	// In this order: the ends of helper runs are delivered before strays are stopped.
	for _, step := range []func(context.Context) error{s.workspaceDirs.resolveWorkspaces, s.recover, s.budgets.loadBudgets,
		func(ctx context.Context) error { return s.batchRuns.load(ctx, s.st) }, s.helpers.deliverEnded, s.helpers.stopStrays} {
		if err := step(ctx); err != nil {
			return err
		}
	}
	s.wg.Go(func() { s.probeLoop(ctx) })
	if s.mem != nil && s.mem.ix.NeedsRebuild() {
		s.memoryService.rebuildInBackground(s.mem.ix.RebuildReason())
	}
	var agents []*store.Agent
	err := s.st.View(ctx, func(tx *store.Tx) (err error) { agents, err = tx.Agents(); return })
	if err != nil {
		return err
	}
	var awaiting []string // their loops would only wait: started after the others, paced
	for _, a := range agents {
		switch {
		case a.State == api.StateAwaitingDecision:
			awaiting = append(awaiting, a.ID)
		case active(a.State):
			s.kick(a.ID)
		}
	}
	s.wg.Go(func() { kickAwaiting(ctx, s, awaiting) })
	return nil
}

// Wait blocks until every agent loop has returned (after the Start context ended), then
// closes the checkpoint and effect-preview stores.
func (s *Supervisor) Wait() {
	s.wg.Wait()
	s.checkpoints.closeAll()
	if s.previews != nil {
		s.previews.Close()
	}
}

// recover finds commands that were running when the daemon died.
func (s *Supervisor) recover(ctx context.Context) error {
	return s.st.Tx(ctx, func(tx *store.Tx) error {
		started, err := tx.ProposalsWithStatus(api.ProposalStarted)
		if err != nil {
			return err
		}
		for _, p := range started {
			a, err := tx.Agent(p.AgentID)
			if err != nil {
				return err
			}
			if _, err := tx.WaitFor(p.ID); err == nil && p.RunID == a.RunID {
				continue // it waits for a helper, which goes on; deliverEnded sees to one that ended
			} else if err != nil && !errors.Is(err, store.ErrNotFound) {
				return err
			}
			on := a
			if p.RunID != a.RunID {
				on = nil // its run was replaced while it ran
			}
			// A step checkpointed at its start has no end to record what it changed:
			// record_change says that is not known, and the y! grants end.
			writes := s.checkpoints.took(tx, &p)
			recovered := func(on *store.Agent, ev cycle.Event) error {
				ev.Writes = writes
				_, err := apply(tx, &change{a: on, p: &p, ev: ev, ckpt: s.checkpoints})
				return err
			}
			ev := cycle.Event{Kind: cycle.Recovered, Result: "interrupted by a daemon restart after its run had ended",
				Reason: "the daemon stopped while " + p.Command + " ran; it may or may not have finished: decide again"}
			if p.Command == "append_to_file" { // not idempotent: show what is there to decide on
				if note := commands.InterruptedAppend(a.Workspace, p.Args); note != "" {
					ev.Reason += ". " + note
				}
			}
			const lost = "its end was lost in a daemon restart, so what it wrote was not held to the write-deny rules"
			if on == nil || !active(a.State) {
				// Its run was stopped or replaced while it ran: record it, ask no one. What
				// it wrote is in the workspace whatever run the agent is on: the table marks it.
				late := cycle.Event{Kind: cycle.RecoveredLate, Result: ev.Result, Reason: lost}
				if err := recovered(a, late); err != nil {
					return err
				}
				if err := tx.UpdateAgent(a); err != nil {
					return err
				}
				s.audit.keep(tx, p.AgentID, "interrupted", map[string]string{"proposal": p.ID, "command": p.Command, "run": "ended"})
				continue
			}
			if p.Command == commands.AskUser {
				continue // the question is still open; the answer completes it
			}
			if spec := s.specIn(ctx, s.live(), tx, a, p.Command); spec != nil && spec.Idempotent {
				// What it wrote, the table marks, pausing the agent for a person.
				if err := recovered(a, cycle.Event{Kind: cycle.RecoveredIdempotent, Reason: lost}); err != nil {
					return err
				}
				if err := tx.UpdateAgent(a); err != nil {
					return err
				}
				s.audit.keep(tx, p.AgentID, "recovered", map[string]string{"proposal": p.ID, "action": "re-run (idempotent)"})
				continue
			}
			if err := recovered(a, ev); err != nil {
				return err
			}
			if err := tx.UpdateAgent(a); err != nil {
				return err
			}
			s.audit.keep(tx, p.AgentID, "interrupted", map[string]string{"proposal": p.ID, "command": p.Command})
			s.log.Warn("command interrupted by a restart", "agent", p.AgentID, "proposal", p.ID, "command", p.Command)
		}
		return nil
	})
}

// spawn runs fn in a goroutine Wait waits for, under the daemon's root context; false,
// without running it, when the daemon is not running.
func (s *Supervisor) spawn(fn func(ctx context.Context)) bool {
	s.mu.Lock()
	ctx := s.ctx
	s.mu.Unlock()
	if ctx == nil || ctx.Err() != nil {
		return false
	}
	s.wg.Go(func() { fn(ctx) })
	return true
}

// kick makes sure the agent's loop runs and wakes it.
func (s *Supervisor) kick(id string) { startLoop(s, id, nil) }

func (s *Supervisor) runner(id string) *runner {
	s.mu.Lock()
	defer s.mu.Unlock()
	return runnerLocked(s, id)
}

// runnerLocked is s.runner, called with s.mu held.
func runnerLocked(s *Supervisor, id string) *runner {
	r := s.runners[id]
	if r == nil {
		r = &runner{s: s, id: id, wake: make(chan struct{}, 1)}
		s.runners[id] = r
	}
	return r
}

// live returns the current settings generation.
func (s *Supervisor) live() *live { return s.cur.Load() }

// build makes a settings generation; it fails on a command or component name that does
// not exist, or a permission pattern that does not parse.
func (s *Supervisor) build(set Settings) (*live, error) {
	if set.Model == "" {
		return nil, fmt.Errorf("agent: no model configured")
	}
	l := &live{Settings: set}
	if err := s.buildPipelines(l); err != nil {
		return nil, err
	}
	var err error
	if l.policy, err = parseRules(set); err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	return l, nil
}

// Reload swaps in new settings. Agents keep running: a step under way finishes with the
// old settings, the next one uses the new. Bad settings are refused and the old ones
// stay. A changed model is probed again before its first prompt.
func (s *Supervisor) Reload(set Settings) error {
	l, err := s.build(set)
	if err != nil {
		return err
	}
	old := s.cur.Swap(l)
	s.opt.LLM.SetLimits(l.limits()) // a new max_context or keep_alive: each model's Load is chosen again
	if old == nil || old.Model != l.Model || old.SmartModel != l.SmartModel {
		s.model.switchTo(l.Model, l.SmartModel)
		select {
		case s.reprobe <- struct{}{}:
		default:
		}
	}
	return nil
}

// Settings returns the settings in use now.
func (s *Supervisor) Settings() Settings { return s.live().Settings }

// ModelSettings returns the model settings in use now, for the team engine's own calls.
func (s *Supervisor) ModelSettings() run.ModelSettings {
	set := s.live().Settings
	return run.ModelSettings{Model: set.Model, MaxContext: set.MaxContext, KeepAlive: set.KeepAlive.Ptr()}
}

// startPaced is how many agents that were awaiting a decision take their first loop
// round at once after a start. That round only re-checks the proposal against the
// policy in force (a rule added while the daemon was down may approve it) and then
// waits for a person; with 10,000 of them started at once, their reads queued on the
// store's one connection ahead of everything else, and the daemon took seconds to list
// them. Paced, they run beside the API instead of in front of it.
const startPaced = 2

// kickAwaiting starts the loops of agents awaiting a decision, startPaced at a time, in
// the order given; it returns when all have started their first round or ctx ends.
func kickAwaiting(ctx context.Context, s *Supervisor, ids []string) {
	slots := make(chan struct{}, startPaced)
	for _, id := range ids {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return
		}
		if !startLoop(s, id, func() { <-slots }) {
			<-slots // its loop runs already: a decision or a task came first
		}
	}
}

// startLoop starts id's loop unless it runs already, and wakes it: the one way a loop
// starts (kick is startLoop(s, id, nil)). With rounded set — the paced start — a loop
// started here calls rounded once its first round has chosen what to do (or it ended
// before), and a loop running already is left alone, not woken. It reports whether it
// started a loop; never when the supervisor is not running.
func startLoop(s *Supervisor, id string, rounded func()) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := runnerLocked(s, id)
	if s.ctx == nil || s.ctx.Err() != nil {
		return false
	}
	started := !r.running
	switch {
	case started:
		r.running, r.rounded = true, rounded
		s.wg.Go(func() { r.loop(s.ctx) })
	case rounded != nil:
		return false // its loop runs already: a decision or a task came first
	}
	r.wakeUp()
	return started
}

// probeLoop probes the model server until it answers, then again every minute so that
// status stays true and a model pulled later is noticed. After a failed probe it waits
// with backoff, or until the pool finds a host that serves the model back.
func (s *Supervisor) probeLoop(ctx context.Context) {
	s.model.mu.Lock()
	s.model.host = s.opt.LLM.Host()
	s.model.mu.Unlock()
	attempt := 0
	for {
		model := s.live().Model
		// Watched from before the probe: a host back while it fails is not missed.
		back, stop := s.opt.LLM.Servable(model)
		pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		info, err := s.opt.LLM.Probe(pctx, model)
		cancel()
		wait := time.Minute
		if err != nil {
			s.model.failed(err) // the last good probe stays: the model's limits do not change when it is away
			attempt++
			wait = s.opt.Backoff(attempt)
		} else {
			s.model.probedOK(model, info)
			attempt = 0
			back = nil // it answered: nothing to wait for
		}
		if err != nil && ctx.Err() == nil {
			s.log.Warn("model probe failed", "model", model, "err", err)
		} else if err == nil && attempt == 0 {
			s.log.Debug("model probed", "model", model, "version", info.ServerVersion, "context", info.ContextLength)
		}
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		case <-back:
			attempt = 0
		case <-s.reprobe: // a reload changed the model
			attempt = 0
		}
		stop()
		if ctx.Err() != nil {
			return
		}
	}
}

// freshen asks the model server (every host of a pool) again when the last answer is
// older than maxAge, and records what it says.
func (s *Supervisor) freshen(ctx context.Context, maxAge time.Duration) {
	m := &s.model
	m.asking.Lock()
	defer m.asking.Unlock()
	m.mu.Lock()
	age := time.Since(m.checked)
	m.mu.Unlock()
	if age <= maxAge {
		return
	}
	s.opt.LLM.Recheck(ctx, maxAge) // bounded by the pool's own probe timeout
	model := s.live().Model
	pctx, cancel := context.WithTimeout(ctx, statusProbeTimeout)
	defer cancel()
	info, err := s.opt.LLM.Probe(pctx, model)
	switch {
	case err == nil:
		m.probedOK(model, info)
	case ctx.Err() != nil: // the asker left: nothing learned
	case pctx.Err() != nil:
		m.failed(&llm.UnavailableError{Host: s.opt.LLM.Host(), Op: "version", Err: fmt.Errorf("no answer within %s", statusProbeTimeout)})
	default:
		m.failed(err)
	}
}

func (s *Supervisor) now() time.Time {
	if s.opt.Now != nil {
		return s.opt.Now()
	}
	return time.Now()
}
