package schedule

import (
	"cmp"
	"context"
	"errors"
	"regexp"
	"strings"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/commands/permission"
	"github.com/agentd/agentd/daemon/schedule/cron"
	"github.com/agentd/agentd/daemon/store"
	"github.com/agentd/agentd/internal/randid"
)

// Limits on what a schedule may hold.
const (
	maxGoal        = 8000
	maxDescription = 500
	maxAllow       = 20
	// nextShown is how many fire times add and show list.
	nextShown = 5
)

var (
	nameRE     = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,39}$`)
	templateRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,32}$`) // room for "-xxxxxx"
)

func badRequest(format string, args ...any) error {
	return api.Errorf(api.ErrBadRequest, format, args...)
}

// apiErr gives the Scheduler's errors their API kinds.
func apiErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, cron.ErrNotFound):
		return api.Errorf(api.ErrNotFound, "%v", err)
	case errors.Is(err, cron.ErrStopped):
		return api.Errorf(api.ErrConflict, "the scheduler is stopped: agentd is shutting down")
	}
	return err
}

func (m *Manager) wait(ctx context.Context) error {
	select {
	case <-m.loaded:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// find waits for the schedules to load and reads the one ref names (resolve).
func (m *Manager) find(ctx context.Context, ref string) (*store.Schedule, error) {
	if err := m.wait(ctx); err != nil {
		return nil, err
	}
	row, err := store.Read(ctx, m.st, func(tx *store.Tx) (*store.Schedule, error) { return resolve(tx, ref) })
	return row, err
}

// resolve finds a schedule by id or name.
func resolve(tx *store.Tx, ref string) (*store.Schedule, error) {
	s, err := tx.Schedule(ref)
	if errors.Is(err, store.ErrNotFound) {
		s, err = tx.ScheduleByName(ref)
	}
	if errors.Is(err, store.ErrNotFound) {
		return nil, api.Errorf(api.ErrNotFound, "no schedule %q: see `agentctl schedule ls`", ref)
	}
	return s, err
}

// view is a stored schedule as the API shows it, with the Scheduler's status; next
// fire times are listed when n > 0.
func (m *Manager) view(row *store.Schedule, n int) api.Schedule {
	out := row.Schedule
	out.Autonomy.Allow = append([]string(nil), row.Autonomy.Allow...)
	out.TimeZone = "Local"
	if loc, err := m.location(row.TimeZone); err == nil {
		if spec, err := cron.ParseIn(row.Spec, loc); err == nil {
			out.TimeZone = spec.Location().String()
			if n > 0 && !row.Paused {
				out.NextTimes = cron.Next(spec, m.clock.Now(), n)
			}
		}
	}
	if st, err := m.sched.Status(row.ID); err == nil {
		out.Next, out.Running, out.Queued, out.Paused = st.Next, st.Running, st.Queued, st.Paused
	}
	return out
}

// Schedules lists every schedule by name.
func (m *Manager) Schedules(ctx context.Context) ([]api.Schedule, error) {
	if err := m.wait(ctx); err != nil {
		return nil, err
	}
	rows, err := store.Read(ctx, m.st, func(tx *store.Tx) ([]*store.Schedule, error) { return tx.Schedules() })
	if err != nil {
		return nil, err
	}
	out := make([]api.Schedule, 0, len(rows))
	for _, r := range rows {
		out = append(out, m.view(r, 0))
	}
	return out, nil
}

// Schedule returns one schedule with its status and next fire times.
func (m *Manager) Schedule(ctx context.Context, ref string) (*api.Schedule, error) {
	if err := m.wait(ctx); err != nil {
		return nil, err
	}
	var row *store.Schedule
	var runs, steps int
	var tokens int64
	var wk *api.WakeStatus
	if err := m.st.View(ctx, func(tx *store.Tx) (err error) {
		if row, err = resolve(tx, ref); err != nil {
			return err
		}
		if runs, steps, tokens, err = tx.ScheduleTotals(row.ID); err != nil {
			return err
		}
		wk, err = wakeStatus(tx, row)
		return err
	}); err != nil {
		return nil, err
	}
	v := m.view(row, nextShown)
	v.Runs, v.Steps, v.Tokens, v.Wake = runs, steps, tokens, wk
	return &v, nil
}

// AddSchedule checks req, stores the schedule and starts firing it. Every problem with
// the request is a bad request naming the field.
func (m *Manager) AddSchedule(ctx context.Context, req api.ScheduleRequest) (*api.Schedule, error) {
	if err := m.wait(ctx); err != nil {
		return nil, err
	}
	row, sc, err := m.check(ctx, req)
	if err != nil {
		return nil, err
	}
	if row.When, err = m.checkWhen(ctx, req.When, row); err != nil {
		return nil, err
	}
	row.ID = randid.ID("s-")
	row.Cursor = m.clock.Now() // firings before it are none of its business
	sc.ID, sc.LastFired = row.ID, row.Cursor
	err = m.st.Tx(ctx, func(tx *store.Tx) error {
		if _, err := tx.ScheduleByName(row.Name); err == nil {
			return api.Errorf(api.ErrConflict, "a schedule named %q exists already: pick another name, or remove it first", row.Name)
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		return tx.InsertSchedule(row)
	})
	if err != nil {
		return nil, err
	}
	if err := m.sched.Add(sc); err != nil {
		m.st.Tx(context.WithoutCancel(ctx), func(tx *store.Tx) error { return tx.DeleteSchedule(row.ID) })
		return nil, apiErr(err)
	}
	m.log.Info("schedule added", "schedule", row.Name, "spec", row.Spec, "id", row.ID)
	v := m.view(row, nextShown)
	return &v, nil
}

// check validates req and returns the row to store and the Scheduler's schedule: each
// step checks and sets one part, in the order their problems are reported.
func (m *Manager) check(ctx context.Context, req api.ScheduleRequest) (*store.Schedule, cron.Schedule, error) {
	var sc cron.Schedule
	row := &store.Schedule{}
	steps := []func() error{
		func() error { return checkName(req.Name, row) },
		func() error { return m.checkSpec(req, row, &sc) },
		func() error { return m.checkTarget(ctx, req, row) },
		func() error { return checkGoal(req, row) },
		func() error { return checkBudget(req.Budget, row) },
		func() error { return checkAutonomy(req.Autonomy, row) },
		func() (err error) { row.Delivery, err = m.checkDelivery(req.Delivery); return err },
		func() error { return checkRunPolicy(req, row, &sc) },
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return nil, sc, err
		}
	}
	return row, sc, nil
}

// checkName sets the schedule's name: short, lowercase, the way people type it.
func checkName(name string, row *store.Schedule) error {
	name = strings.TrimSpace(name)
	if name == "" {
		return badRequest("name is required: a short name such as notes-digest (lowercase letters, digits, - or _)")
	}
	if !nameRE.MatchString(name) {
		return badRequest("name %q: use 1-40 lowercase letters, digits, - or _, starting with a letter or digit", name)
	}
	row.Name = name
	return nil
}

// checkSpec sets the cron spec and its time zone, which the spec and time_zone may each
// name, but not differently.
func (m *Manager) checkSpec(req api.ScheduleRequest, row *store.Schedule, sc *cron.Schedule) error {
	tz := strings.TrimSpace(req.TimeZone)
	loc, err := m.location(tz)
	if err != nil {
		return badRequest("time_zone: %v", err)
	}
	spec, err := cron.ParseIn(req.Spec, loc)
	if err != nil {
		return badRequest("%v", err)
	}
	if tz != "" && spec.Location() != loc && spec.Location().String() != loc.String() {
		return badRequest("the spec names its zone (%s) and time_zone names another (%s): give one", spec.Location(), tz)
	}
	row.Spec, row.TimeZone, sc.Spec = spec.String(), tz, spec
	return nil
}

// checkTarget sets what each firing runs: an existing agent, or a template that creates
// a fresh agent per run (which alone takes a description).
func (m *Manager) checkTarget(ctx context.Context, req api.ScheduleRequest, row *store.Schedule) error {
	switch agentRef, tmpl := strings.TrimSpace(req.Agent), strings.TrimSpace(req.Template); {
	case agentRef != "" && tmpl != "":
		return badRequest("give an agent (an existing agent gets the goal) or a template (each run creates a fresh agent), not both")
	case agentRef != "":
		a, err := m.agents.Agent(ctx, agentRef)
		if err != nil {
			if errors.Is(err, api.ErrNotFound) {
				return badRequest("agent: no agent %q: see `agentctl ls`, or use a template to create one per run", agentRef)
			}
			return err
		}
		row.Agent = a.ID
		if req.Description != "" {
			return badRequest("description is for template agents; the agent %s has its own", a.Name)
		}
	case tmpl != "":
		if !templateRE.MatchString(tmpl) {
			return badRequest("template %q: use 1-33 lowercase letters, digits, - or _ (each run's agent is named TEMPLATE-xxxxxx)", tmpl)
		}
		row.Template = tmpl
	default:
		return badRequest("no target: give an agent (an existing agent gets the goal) or a template (each run creates a fresh agent)")
	}
	return nil
}

// checkGoal sets the description and the goal each run is given.
func checkGoal(req api.ScheduleRequest, row *store.Schedule) error {
	row.Description = strings.TrimSpace(req.Description)
	if len(row.Description) > maxDescription {
		return badRequest("description is %d bytes: at most %d", len(row.Description), maxDescription)
	}
	row.Goal = strings.TrimSpace(req.Goal)
	if row.Goal == "" {
		return badRequest("goal is empty: say what each run should do, e.g. \"summarize what changed in ~/notes\"")
	}
	if len(row.Goal) > maxGoal {
		return badRequest("goal is %d bytes: at most %d", len(row.Goal), maxGoal)
	}
	return nil
}

// checkRunPolicy sets what a firing does while a run is going (concurrency) and with
// firings missed while the daemon was down, and whether the schedule starts paused.
func checkRunPolicy(req api.ScheduleRequest, row *store.Schedule, sc *cron.Schedule) error {
	c, err := cron.ParseConcurrency(strings.TrimSpace(req.Concurrency))
	if err != nil {
		return badRequest("concurrency: %v", err)
	}
	missed, err := cron.ParseMissedPolicy(strings.TrimSpace(req.Missed))
	if err != nil {
		return badRequest("missed: %v", err)
	}
	row.Concurrency, row.Missed, row.Paused = string(c), missed.String(), req.Paused
	sc.Concurrency, sc.Missed, sc.Paused = c, missed, req.Paused
	return nil
}

func checkBudget(b api.Budget, row *store.Schedule) error {
	if b.MaxSteps < 0 {
		return badRequest("budget max_steps %d: want 0 (no bound) or more", b.MaxSteps)
	}
	if b.MaxTokens < 0 {
		return badRequest("budget max_tokens %d: want 0 (no bound) or more", b.MaxTokens)
	}
	row.Budget = api.Budget{MaxSteps: b.MaxSteps, MaxTokens: b.MaxTokens}
	if t := strings.TrimSpace(b.MaxTime); t != "" {
		d, err := time.ParseDuration(t)
		if err != nil {
			return badRequest("budget max_time %q is not a duration such as 30m or 1h30m", t)
		}
		if d < time.Second {
			return badRequest("budget max_time %v: want at least 1s (leave it out for no bound)", d)
		}
		row.MaxWall, row.Budget.MaxTime = d, d.String()
	}
	return nil
}

func checkAutonomy(au api.Autonomy, row *store.Schedule) error {
	mode := cmp.Or(strings.TrimSpace(au.Mode), api.AutonomyAsk)
	if au.Steps < 0 {
		return badRequest("autonomy steps %d: want 0 or more", au.Steps)
	}
	if au.Steps > 0 && mode != api.AutonomyAuto {
		return badRequest("autonomy steps go with mode auto, not %s", mode)
	}
	if len(au.Allow) > 0 && mode != api.AutonomyPatterns {
		return badRequest("allow patterns go with autonomy mode patterns, not %s", mode)
	}
	row.Autonomy = api.Autonomy{Mode: mode, Steps: au.Steps}
	switch mode {
	case api.AutonomyAsk:
	case api.AutonomyAuto:
		if au.Steps == 0 && row.Budget.MaxSteps == 0 {
			return badRequest("autonomy auto needs a number of steps: give steps, or a max_steps budget (the run goes on unasked up to it)")
		}
	case api.AutonomyPatterns:
		if len(au.Allow) == 0 {
			return badRequest("autonomy patterns needs at least one allow pattern, e.g. read_file(*)")
		}
		if len(au.Allow) > maxAllow {
			return badRequest("%d allow patterns: at most %d", len(au.Allow), maxAllow)
		}
		for _, p := range au.Allow {
			pat, err := permission.Parse(strings.TrimSpace(p))
			if err != nil {
				return badRequest("allow pattern: %v", err)
			}
			row.Autonomy.Allow = append(row.Autonomy.Allow, pat.String())
		}
	default:
		return badRequest("autonomy mode %q: use ask, auto or patterns", au.Mode)
	}
	return nil
}

// RemoveSchedule stops firing a schedule and removes it with its run records. Runs in
// progress go on. (Scheduler calls flush records through the store, so they come after
// the store's transaction, never inside it.)
func (m *Manager) RemoveSchedule(ctx context.Context, ref string) error {
	if err := m.wait(ctx); err != nil {
		return err
	}
	var id string
	err := m.st.Tx(ctx, func(tx *store.Tx) error {
		row, err := resolve(tx, ref)
		if err != nil {
			return err
		}
		id = row.ID
		return tx.DeleteSchedule(row.ID)
	})
	if err != nil {
		return err
	}
	if err := m.sched.Remove(ctx, id); err != nil && !errors.Is(err, cron.ErrNotFound) {
		return err
	}
	if m.wake.Engine != nil {
		if err := m.wake.Engine.Forget(id); err != nil {
			m.log.Warn("schedules: removing a schedule's checkpoints", "schedule", id, "err", err)
		}
	}
	return nil
}

// PauseSchedule stops a schedule firing until ResumeSchedule.
func (m *Manager) PauseSchedule(ctx context.Context, ref string) (*api.Schedule, error) {
	return m.setPaused(ctx, ref, true)
}

// ResumeSchedule lets a paused schedule fire again, from now on.
func (m *Manager) ResumeSchedule(ctx context.Context, ref string) (*api.Schedule, error) {
	return m.setPaused(ctx, ref, false)
}

func (m *Manager) setPaused(ctx context.Context, ref string, paused bool) (*api.Schedule, error) {
	if err := m.wait(ctx); err != nil {
		return nil, err
	}
	var row *store.Schedule
	err := m.st.Tx(ctx, func(tx *store.Tx) (err error) {
		if row, err = resolve(tx, ref); err != nil {
			return err
		}
		if row.Paused == paused {
			return api.Errorf(api.ErrConflict, "schedule %s is %s already", row.Name, map[bool]string{true: "paused", false: "not paused"}[paused])
		}
		row.Paused = paused
		return tx.SetSchedulePaused(row.ID, paused)
	})
	if err != nil {
		return nil, err
	}
	if paused {
		err = m.sched.Pause(ctx, row.ID)
	} else {
		err = m.sched.Resume(ctx, row.ID)
	}
	if err != nil {
		return nil, apiErr(err)
	}
	v := m.view(row, nextShown)
	return &v, nil
}

// RunSchedule fires a schedule now, paused or not, under its concurrency policy, and
// returns the firing's record (started with its run, queued, skipped or failed).
func (m *Manager) RunSchedule(ctx context.Context, ref string) (*api.ScheduleRun, error) {
	row, err := m.find(ctx, ref)
	if err != nil {
		return nil, err
	}
	rec, err := m.sched.RunNow(ctx, row.ID)
	if err != nil {
		return nil, apiErr(err)
	}
	out := wireRun(rec)
	if rec.RunID != "" {
		if run, err := store.Read(ctx, m.st, func(tx *store.Tx) (*store.Run, error) { return tx.Run(rec.RunID) }); err == nil {
			out.AgentID = run.AgentID
		}
	}
	return out, nil
}

// ScheduleHistory returns a schedule's firing records, newest first (at most limit when
// limit > 0).
func (m *Manager) ScheduleHistory(ctx context.Context, ref string, limit int) ([]api.ScheduleRun, error) {
	if limit < 0 {
		return nil, badRequest("limit %d: want 0 (all) or more", limit)
	}
	return store.Read(ctx, m.st, func(tx *store.Tx) ([]api.ScheduleRun, error) {
		row, err := resolve(tx, ref)
		if err != nil {
			return nil, err
		}
		return tx.ScheduleRuns(row.ID, limit)
	})
}
