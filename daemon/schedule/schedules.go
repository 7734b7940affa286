// Package schedule puts recurring goals into the daemon: it keeps schedules in the store,
// feeds them to the firing clock (daemon/schedule/cron's Scheduler), starts each firing's
// run through the agent supervisor, and records every firing and every run's end in
// schedule_runs.
//
// It sits between daemon/schedule/cron (specs, fire times, the firing loop; no I/O),
// daemon/store and the supervisor, which it reaches only through its Agents interface
// and the shared types of daemon/run (run.Options, run.End): it never imports
// daemon/agent. The server creates a Manager, passes its RunEnded to the supervisor's
// OnRunEnd, starts it after the supervisor and stops it first on shutdown. The Manager
// serves the schedule half of the local API (localapi.ScheduleService).
package schedule

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/daemon/localapi"
	"github.com/agentd/agentd/daemon/run"
	"github.com/agentd/agentd/daemon/schedule/cron"
	"github.com/agentd/agentd/daemon/store"
	"github.com/agentd/agentd/internal/randid"
)

// Agents is what the Manager needs of the agent supervisor.
type Agents interface {
	Agent(ctx context.Context, ref string) (*api.Agent, error)
	StartTask(ctx context.Context, ref, task string, opt run.Options) (*api.Agent, error)
	CreateRun(ctx context.Context, req api.CreateAgentRequest, opt run.Options) (*api.Agent, error)
	// CreateAgent with Start false makes an idle agent (bound to a chat thread before its
	// run starts); DeleteAgent removes an old template agent and its workspace.
	CreateAgent(ctx context.Context, req api.CreateAgentRequest) (*api.Agent, error)
	DeleteAgent(ctx context.Context, ref string) error
	// DeniedPaths are what the agent's deny rules keep from its programs: its schedules'
	// checks keep to them too.
	DeniedPaths(ctx context.Context, ref string) (commands.PathRules, error)
}

var _ localapi.ScheduleService = (*Manager)(nil)

// Options configure a Manager.
type Options struct {
	Store  *store.Store
	Agents Agents
	Clock  cron.Clock   // nil is the system clock
	Log    *slog.Logger // nil discards
	// Grace is how late a firing may start and still count as on time (default 1m).
	Grace time.Duration
	// Local is the zone of specs that name none (default time.Local).
	Local *time.Location
	// Chat, when set, delivers runs to chat channels (the bots' relay); without it a
	// schedule may only deliver to agentctl.
	Chat Chat
	// KeepAgents is how many finished agents of each template schedule are kept; older
	// ones are removed with their workspaces when a run ends. 0 keeps them all.
	KeepAgents int
	// Metrics, if set, counts firings by their final outcome.
	Metrics interface{ ScheduleRun(result string) }
	// Wake checks schedules' wake conditions; a zero Wake refuses conditions.
	Wake Wake
}

// Manager owns the daemon's schedules. Lifecycle: New, Start (loads the stored schedules;
// firings missed while the daemon was down are handled by each one's missed-run policy),
// the API methods at any time, RunEnded for every run that ends, Stop.
type Manager struct {
	st      *store.Store
	agents  Agents
	clock   cron.Clock
	log     *slog.Logger
	local   *time.Location
	sched   *cron.Scheduler
	chat    Chat
	keep    atomic.Int64                            // KeepAgents; SetSettings changes it
	metrics interface{ ScheduleRun(result string) } // nil: not counted
	wake    Wake

	// loaded is closed when Start has added the stored schedules; API calls wait for it
	// so none sees a half-loaded scheduler.
	loaded   chan struct{}
	loadOnce sync.Once
	// pruneMu keeps one prune at a time, so two runs ending together remove each agent once.
	pruneMu sync.Mutex
	// pruning counts prunes under way (tests wait for them).
	pruning sync.WaitGroup
}

// New returns a Manager; call Start to load and fire the stored schedules.
func New(opt Options) *Manager {
	m := &Manager{st: opt.Store, agents: opt.Agents, clock: cmp.Or[cron.Clock](opt.Clock, cron.SystemClock{}),
		log: cmp.Or(opt.Log, slog.New(slog.DiscardHandler)), local: cmp.Or(opt.Local, time.Local), chat: opt.Chat, metrics: opt.Metrics,
		wake: opt.Wake, loaded: make(chan struct{})}
	m.keep.Store(int64(opt.KeepAgents))
	m.sched = cron.New(cron.Config{
		Starter: m.start, Recorder: m.record,
		Clock: m.clock, Log: m.log, Grace: opt.Grace,
	})
	return m
}

// Start loads the stored schedules and starts the firing loop, which runs until ctx ends
// or Stop. A stored schedule that no longer parses is logged and left out.
func (m *Manager) Start(ctx context.Context) error {
	defer m.loadOnce.Do(func() { close(m.loaded) })
	rows, err := store.Read(ctx, m.st, func(tx *store.Tx) ([]*store.Schedule, error) { return tx.Schedules() })
	if err != nil {
		return fmt.Errorf("schedules: loading: %w", err)
	}
	for _, row := range rows {
		sc, err := m.toSchedule(row)
		if err == nil {
			err = m.sched.Add(sc)
		}
		if err != nil {
			m.log.Error("schedule left out", "schedule", row.Name, "err", err)
		}
	}
	m.log.Info("schedules loaded", "count", len(rows))
	return m.sched.Start(ctx)
}

// SetSettings changes the grace period and how many finished agents each template
// schedule keeps (a config reload): firings from now on and runs ending from now on use them.
func (m *Manager) SetSettings(grace time.Duration, keepAgents int) {
	m.sched.SetGrace(grace)
	m.keep.Store(int64(keepAgents))
}

// Stop stops the firing loop and stores how far each schedule got, so a restart knows
// which firings it missed. Runs in progress go on.
func (m *Manager) Stop() {
	m.sched.Stop()
	err := m.st.Tx(context.Background(), func(tx *store.Tx) error {
		for _, st := range m.sched.List() {
			if err := tx.SetLastFired(st.ID, st.LastFired); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		m.log.Warn("schedules: storing last fire times", "err", err)
	}
}

// location returns the zone a schedule's spec is read in when the spec names none.
func (m *Manager) location(tz string) (*time.Location, error) {
	if tz == "" || tz == "Local" {
		return m.local, nil
	}
	loc, err := time.LoadLocation(tz)
	if err != nil {
		return nil, fmt.Errorf("unknown time zone %q: use an IANA name such as Europe/Berlin", tz)
	}
	return loc, nil
}

// toSchedule turns a stored schedule into the Scheduler's view of it.
func (m *Manager) toSchedule(row *store.Schedule) (cron.Schedule, error) {
	loc, err := m.location(row.TimeZone)
	if err != nil {
		return cron.Schedule{}, err
	}
	spec, err := cron.ParseIn(row.Spec, loc)
	if err != nil {
		return cron.Schedule{}, err
	}
	missed, err := cron.ParseMissedPolicy(row.Missed)
	if err != nil {
		return cron.Schedule{}, err
	}
	return cron.Schedule{ID: row.ID, Spec: spec, Paused: row.Paused, Concurrency: cron.Concurrency(row.Concurrency),
		Missed: missed, LastFired: row.Cursor}, nil
}

// start is the Starter: it gives the schedule's goal to its agent, or to a fresh agent
// made from its template, with the schedule's autonomy and budgets.
func (m *Manager) start(ctx context.Context, f cron.Firing) (string, error) {
	row, err := store.Read(ctx, m.st, func(tx *store.Tx) (*store.Schedule, error) { return tx.Schedule(f.ScheduleID) })
	if err != nil {
		return "", fmt.Errorf("reading the schedule: %w", err)
	}
	v, err := m.checkFiring(ctx, row, f) // before any model call
	if err != nil {
		return "", err
	}
	opt := runOptions(row)
	if v != nil {
		opt.Observation = v.Observation // the run's first step: what the check found
	}
	if d, ok := m.chatOf(row); ok {
		runID, err := m.startInThread(ctx, d, row, f, opt, row.Goal)
		if err == nil {
			m.started(ctx, v)
		}
		return runID, err
	}
	var a *api.Agent
	if row.Agent != "" {
		a, err = m.agents.StartTask(ctx, row.Agent, row.Goal, opt)
		err = agentGone(err, row)
	} else {
		req := m.templateRequest(row, true)
		req.Task = row.Goal
		a, err = m.agents.CreateRun(ctx, req, opt)
	}
	if err != nil {
		return "", err
	}
	m.started(ctx, v)
	m.log.Info("scheduled run started", "schedule", row.Name, "firing", f.ID, "agent", a.Name, "run", a.RunID)
	return a.RunID, nil
}

// startInThread starts a firing's run bound to a new thread in d: the thread and the
// binding come first, so the run's first proposal finds them. A chat that cannot be
// posted to does not hold the run back; it is then followed with agentctl.
func (m *Manager) startInThread(ctx context.Context, d delivery, row *store.Schedule, f cron.Firing, opt run.Options, task string) (string, error) {
	thread, err := m.openThread(ctx, d, row, f)
	if err != nil {
		m.log.Warn("schedules: no chat thread for a run; it goes on without", "schedule", row.Name, "delivery", d, "err", err)
	}
	ref := row.Agent
	if ref == "" {
		a, err := m.agents.CreateAgent(ctx, m.templateRequest(row, false))
		if err != nil {
			return "", err // the firing's failure is posted in the channel by announce
		}
		ref = a.ID
	} else if a, err := m.agents.Agent(ctx, ref); err == nil {
		ref = a.ID
	}
	by := "schedule " + row.Name
	if thread != "" {
		if err := m.chat.BindRun(ctx, d.platform, d.channel, thread, ref, "", by); err != nil {
			m.log.Warn("schedules: binding a run to its thread", "schedule", row.Name, "err", err)
		}
	}
	a, err := m.agents.StartTask(ctx, ref, task, opt)
	if err != nil {
		return "", agentGone(err, row)
	}
	if thread != "" {
		m.chat.BindRun(ctx, d.platform, d.channel, thread, a.ID, a.RunID, by)
	}
	m.log.Info("scheduled run started", "schedule", row.Name, "firing", f.ID, "agent", a.Name, "run", a.RunID, "delivery", d, "thread", thread)
	return a.RunID, nil
}

func agentGone(err error, row *store.Schedule) error {
	if errors.Is(err, api.ErrNotFound) {
		return fmt.Errorf("its agent %s no longer exists: remove the schedule (agentctl schedule rm %s)", row.Agent, row.Name)
	}
	return err
}

// templateRequest is the fresh agent of a template schedule's run.
func (m *Manager) templateRequest(row *store.Schedule, start bool) api.CreateAgentRequest {
	desc := cmp.Or(row.Description, "an autonomous assistant working on the recurring goal of schedule "+row.Name)
	req := api.CreateAgentRequest{Name: row.Template + "-" + randid.Hex(3), Description: desc, Task: row.Goal}
	if !start {
		req.Start = &start
	}
	return req
}

// runOptions maps a schedule's autonomy and budgets onto the run's options.
func runOptions(row *store.Schedule) run.Options {
	opt := run.Options{
		Budget: run.Budget{MaxSteps: row.Budget.MaxSteps, MaxTokens: row.Budget.MaxTokens, MaxWall: row.MaxWall},
		Policy: &api.Policy{Mode: "ask"},
		By:     "schedule " + row.Name,
		Source: "schedule",
	}
	switch row.Autonomy.Mode {
	case api.AutonomyAuto:
		steps := row.Autonomy.Steps
		if steps == 0 {
			steps = row.Budget.MaxSteps
		}
		opt.Policy = &api.Policy{Mode: "auto", AutoSteps: steps}
	case api.AutonomyPatterns:
		opt.Allow = row.Autonomy.Allow
	}
	return opt
}

// chatTimeout bounds a post to chat made off the firing loop.
const chatTimeout = 30 * time.Second

// record is the Recorder: one schedule_runs row per firing, and the schedule's last fire
// time moved on by every firing that was not asked for by run-now.
func (m *Manager) record(ctx context.Context, r cron.Record) error {
	if m.chat != nil {
		// After the record is stored, and off the firing loop: chat may be slow.
		defer func() {
			go func() {
				ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), chatTimeout)
				defer cancel()
				m.announce(ctx, r)
			}()
		}()
	}
	return m.st.Tx(ctx, func(tx *store.Tx) error {
		if err := tx.RecordScheduleRun(wireRun(r)); err != nil {
			return err
		}
		if r.Outcome.Final() {
			tx.AfterCommit(func() { m.countRun(string(r.Outcome)) })
		}
		if r.Manual {
			return nil
		}
		return tx.SetLastFired(r.ScheduleID, r.Scheduled)
	})
}

func wireRun(r cron.Record) *api.ScheduleRun {
	return &api.ScheduleRun{ID: r.ID, ScheduleID: r.ScheduleID, Scheduled: r.Scheduled, Started: r.Started, Ended: r.Ended,
		Manual: r.Manual, Outcome: r.Outcome, Reason: r.Reason, RunID: r.RunID, Steps: r.Steps, Tokens: int64(r.Tokens)}
}

// RunEnded is the supervisor's OnRunEnd: it tells the Scheduler how a run ended (a queued
// firing may start now) and records the end of a scheduled run the Scheduler no longer
// tracks (one that was going when the daemon restarted). Other runs are ignored.
func (m *Manager) RunEnded(end run.End) {
	res := result(end)
	ctx := context.Background()
	m.sched.RunEnded(ctx, end.RunID, res)
	err := m.st.Tx(ctx, func(tx *store.Tx) error {
		ended, err := tx.EndScheduleRun(end.RunID, res.Outcome, res.Reason, res.Steps, int64(res.Tokens))
		if ended {
			tx.AfterCommit(func() { m.countRun(string(res.Outcome)) })
		}
		return err
	})
	if err != nil {
		m.log.Warn("schedules: recording a run's end", "run", end.RunID, "err", err)
	}
	if m.keep.Load() > 0 && end.Outcome != api.RunRemoved {
		// Off the supervisor's path: removing agents takes their runners' locks.
		m.pruning.Add(1)
		go func() { defer m.pruning.Done(); m.prune(ctx, end.RunID, end.AgentID) }()
	}
}

// countRun tells the metrics a firing ended with result.
func (m *Manager) countRun(result string) {
	if m.metrics != nil {
		m.metrics.ScheduleRun(result)
	}
}

// result maps a run's stored outcome onto the schedule's outcomes.
func result(end run.End) cron.Result {
	res := cron.Result{Outcome: api.RunFailed, Reason: end.Reason, Steps: end.Steps, Tokens: int(end.Tokens)}
	switch end.Outcome {
	case api.RunFinished:
		res.Outcome = api.RunFinished
	case api.RunBudgetExhausted:
		res.Outcome = api.RunBudgetExhausted
	case api.RunDenied:
		res.Reason = "the run was denied: " + end.Reason
	case api.RunStopped:
		res.Reason = "the run was stopped: " + end.Reason
		if strings.HasPrefix(end.Reason, "stopped by ") { // the watchdog says who stopped it
			res.Reason = "the run was " + end.Reason
		}
	case api.RunRemoved:
		res.Reason = "the run's agent was removed"
	default:
		res.Reason = string(end.Outcome) + ": " + end.Reason
	}
	return res
}
