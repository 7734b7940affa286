package store

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/agentd/agentd/api"
)

// Run is a run row: the run's budgets and, once it ended, its outcome and counts.
type Run struct {
	ID, AgentID, Task string
	Started, Ended    time.Time // Ended is zero while the run goes on
	Outcome           api.RunOutcome
	Reason            string
	MaxSteps          int
	MaxTokens         int64
	MaxWall           time.Duration
	TokensBase        int64 // the agent's token total when the run started
	Steps             int   // set when the run ends
	Tokens            int64 // set when the run ends
}

const runCols = `id, agent_id, task, started_at, COALESCE(ended_at, 0), outcome, reason, max_steps, max_tokens,
	max_wall_ms, tokens_base, steps, tokens`

func scanRun(sc scanner) (*Run, error) {
	var r Run
	var started, ended, wall int64
	err := sc.Scan(&r.ID, &r.AgentID, &r.Task, &started, &ended, &r.Outcome, &r.Reason, &r.MaxSteps, &r.MaxTokens,
		&wall, &r.TokensBase, &r.Steps, &r.Tokens)
	if err != nil {
		return nil, rowError("reading run", err)
	}
	r.Started, r.Ended, r.MaxWall = fromMS(started), fromMSOrZero(ended), time.Duration(wall)*time.Millisecond
	return &r, nil
}

// Run reads one run.
func (t *Tx) Run(id string) (*Run, error) {
	return scanRun(t.queryRow(`SELECT `+runCols+` FROM runs WHERE id=?`, id))
}

// SetRunBudget sets a run's budgets; zero is no bound.
func (t *Tx) SetRunBudget(id string, maxSteps int, maxTokens int64, maxWall time.Duration) error {
	return t.write("set run budget", `UPDATE runs SET max_steps=?, max_tokens=?, max_wall_ms=? WHERE id=?`,
		maxSteps, maxTokens, maxWall.Milliseconds(), id)
}

// BudgetedRuns lists the runs still going that have a budget (the supervisor caches them).
func (t *Tx) BudgetedRuns() ([]Run, error) {
	return queryAll(t, nil, "budgeted runs", value(scanRun), `SELECT `+runCols+` FROM runs WHERE ended_at IS NULL AND (max_steps>0 OR max_tokens>0 OR max_wall_ms>0)`)
}

// Schedule is a schedule row: the wire type plus its wall-time budget as a duration and
// its fire cursor. The wire type's LastFired is its newest firing record.
type Schedule struct {
	api.Schedule
	MaxWall time.Duration
	// Cursor is where the Scheduler goes on from after a restart (the last_fired column):
	// the last firing handled, or when the schedule was added or resumed, since firings
	// before those are none of its business. It is not a firing: LastFired is.
	Cursor time.Time
}

// scheduleCols are the columns scanSchedule reads: the last is the newest firing record's
// time (NULL when it never fired).
const scheduleCols = `id, name, spec, time_zone, agent_id, template, description, goal, autonomy, auto_steps, allow,
	max_steps, max_tokens, max_wall_ms, delivery, concurrency, missed, paused, created_at, last_fired, conditions`

const scheduleSelect = `SELECT ` + scheduleCols + `,
	(SELECT MAX(scheduled_at) FROM schedule_runs r WHERE r.schedule_id = schedules.id) FROM schedules`

func scanSchedule(sc interface{ Scan(...any) error }) (*Schedule, error) {
	var s Schedule
	var allow, when string
	var wall, created, cursor int64
	var fired sql.NullInt64
	err := sc.Scan(&s.ID, &s.Name, &s.Spec, &s.TimeZone, &s.Agent, &s.Template, &s.Description, &s.Goal,
		&s.Autonomy.Mode, &s.Autonomy.Steps, &allow, &s.Budget.MaxSteps, &s.Budget.MaxTokens, &wall,
		&s.Delivery, &s.Concurrency, &s.Missed, &s.Paused, &created, &cursor, &when, &fired)
	if err != nil {
		return nil, rowError("reading schedule", err)
	}
	json.Unmarshal([]byte(allow), &s.Autonomy.Allow)
	if when != "" {
		s.When = &api.WakeConditions{}
		if err := json.Unmarshal([]byte(when), s.When); err != nil {
			return nil, fmt.Errorf("store: schedule %s: its wake conditions are unreadable: %w", s.Name, err)
		}
	}
	s.MaxWall = time.Duration(wall) * time.Millisecond
	if s.MaxWall > 0 {
		s.Budget.MaxTime = s.MaxWall.String()
	}
	s.CreatedAt, s.Cursor = fromMS(created), fromMSOrZero(cursor)
	if fired.Valid {
		s.LastFired = fromMS(fired.Int64)
	}
	return &s, nil
}

// InsertSchedule stores a new schedule; its name must be free.
func (t *Tx) InsertSchedule(s *Schedule) error {
	s.CreatedAt = t.now
	allow := s.Autonomy.Allow
	if allow == nil {
		allow = []string{}
	}
	_, err := t.exec(`INSERT INTO schedules (`+scheduleCols+`, updated_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`,
		s.ID, s.Name, s.Spec, s.TimeZone, s.Agent, s.Template, s.Description, s.Goal, s.Autonomy.Mode, s.Autonomy.Steps,
		js(allow), s.Budget.MaxSteps, s.Budget.MaxTokens, s.MaxWall.Milliseconds(), s.Delivery, s.Concurrency, s.Missed,
		s.Paused, ms(t.now), msOrZero(s.Cursor), conditionsJSON(s.When), ms(t.now))
	if err != nil {
		return fmt.Errorf("store: insert schedule: %w", err)
	}
	return nil
}

// conditionsJSON is the conditions column: ” for none.
func conditionsJSON(c *api.WakeConditions) string {
	return jsOr(c == nil || len(c.Changed)+len(c.URLs)+len(c.Commands) == 0, c)
}

// SetScheduleConditions replaces a schedule's wake conditions (nil: none); what the old
// ones saw stays and is pruned when the next run starts.
func (t *Tx) SetScheduleConditions(id string, c *api.WakeConditions) error {
	ok, err := t.affected("set schedule conditions", `UPDATE schedules SET conditions=?, updated_at=? WHERE id=?`, conditionsJSON(c), ms(t.now), id)
	if err == nil && !ok {
		return ErrNotFound
	}
	return err
}

// Schedule reads one schedule by id.
func (t *Tx) Schedule(id string) (*Schedule, error) {
	return scanSchedule(t.queryRow(scheduleSelect+` WHERE id=?`, id))
}

// ScheduleByName reads one schedule by its unique name.
func (t *Tx) ScheduleByName(name string) (*Schedule, error) {
	return scanSchedule(t.queryRow(scheduleSelect+` WHERE name=?`, name))
}

// Schedules lists every schedule by name.
func (t *Tx) Schedules() ([]*Schedule, error) {
	return queryAll(t, nil, "list schedules", scanSchedule, scheduleSelect+` ORDER BY name`)
}

// DeleteSchedule removes a schedule and its run records.
func (t *Tx) DeleteSchedule(id string) error {
	return t.write("delete schedule", `DELETE FROM schedules WHERE id=?`, id)
}

// SetSchedulePaused pauses or resumes a schedule. Resuming moves its cursor to now:
// firings while it was paused are not missed ones.
func (t *Tx) SetSchedulePaused(id string, paused bool) error {
	q := `UPDATE schedules SET paused=?, updated_at=? WHERE id=?`
	args := []any{paused, ms(t.now), id}
	if !paused {
		q = `UPDATE schedules SET paused=?, updated_at=?, last_fired=MAX(last_fired, ?) WHERE id=?`
		args = []any{paused, ms(t.now), ms(t.now), id}
	}
	return t.write("pause schedule", q, args...)
}

// SetLastFired moves a schedule's cursor forward to at (never back): the firing at at
// is handled.
func (t *Tx) SetLastFired(id string, at time.Time) error {
	return t.write("set last fired", `UPDATE schedules SET last_fired=MAX(last_fired, ?) WHERE id=?`, ms(at), id)
}

// RecordScheduleRun inserts a firing's record the first time its id is seen and updates it
// after. The agent is taken from the run when the record names one. A record for a
// schedule that was removed meanwhile is dropped.
func (t *Tx) RecordScheduleRun(r *api.ScheduleRun) error {
	return t.write("record schedule run", `INSERT INTO schedule_runs (id, schedule_id, scheduled_at, started_at, ended_at, manual, outcome,
			reason, agent_id, run_id, steps, tokens)
		SELECT ?,?,?,?,?,?,?,?, COALESCE((SELECT agent_id FROM runs WHERE id=?), ?),?,?,? WHERE EXISTS (SELECT 1 FROM schedules WHERE id=?)
		ON CONFLICT (id) DO UPDATE SET started_at=excluded.started_at, ended_at=excluded.ended_at, outcome=excluded.outcome,
			reason=excluded.reason, agent_id=CASE WHEN excluded.agent_id<>'' THEN excluded.agent_id ELSE agent_id END,
			run_id=excluded.run_id, steps=excluded.steps, tokens=excluded.tokens`,
		r.ID, r.ScheduleID, ms(r.Scheduled), msOrZero(r.Started), msOrZero(r.Ended), r.Manual, r.Outcome, r.Reason,
		r.RunID, r.AgentID, r.RunID, r.Steps, r.Tokens, r.ScheduleID)
}

// EndScheduleRun records the end of the scheduled run runID if its record still says
// started (after a restart the scheduler no longer tracks it). It reports whether one did.
func (t *Tx) EndScheduleRun(runID string, outcome api.RunOutcome, reason string, steps int, tokens int64) (bool, error) {
	return t.affected("end schedule run", `UPDATE schedule_runs SET outcome=?, reason=?, steps=?, tokens=?, ended_at=?
		WHERE run_id=? AND outcome='started'`, outcome, reason, steps, tokens, ms(t.now), runID)
}

// ScheduleTotals counts a schedule's firings that started a run, with their steps and
// tokens (a run still going counts once it ends).
func (t *Tx) ScheduleTotals(scheduleID string) (runs, steps int, tokens int64, err error) {
	err = t.queryRow(`SELECT COUNT(*), COALESCE(SUM(steps), 0), COALESCE(SUM(tokens), 0) FROM schedule_runs
		WHERE schedule_id = ? AND run_id <> ''`, scheduleID).Scan(&runs, &steps, &tokens)
	if err != nil {
		err = fmt.Errorf("store: schedule totals: %w", err)
	}
	return runs, steps, tokens, err
}

// ScheduleRuns lists a schedule's firing records, newest first (empty, not nil, when
// none); limit <= 0 is all.
func (t *Tx) ScheduleRuns(scheduleID string, limit int) ([]api.ScheduleRun, error) {
	q := `SELECT id, schedule_id, scheduled_at, started_at, ended_at, manual, outcome, reason, agent_id, run_id, steps, tokens
		FROM schedule_runs WHERE schedule_id=? ORDER BY scheduled_at DESC, rowid DESC`
	args := []any{scheduleID}
	if limit > 0 {
		q += ` LIMIT ?`
		args = append(args, limit)
	}
	return queryAll(t, []api.ScheduleRun{}, "schedule runs", func(sc scanner) (api.ScheduleRun, error) {
		var r api.ScheduleRun
		var sched, started, ended int64
		if err := sc.Scan(&r.ID, &r.ScheduleID, &sched, &started, &ended, &r.Manual, &r.Outcome, &r.Reason,
			&r.AgentID, &r.RunID, &r.Steps, &r.Tokens); err != nil {
			return r, fmt.Errorf("store: reading schedule run: %w", err)
		}
		r.Scheduled, r.Started, r.Ended = fromMS(sched), fromMSOrZero(started), fromMSOrZero(ended)
		return r, nil
	}, q, args...)
}

// ScheduleOfRun returns the id of the schedule whose firing started runID, or ErrNotFound.
func (t *Tx) ScheduleOfRun(runID string) (string, error) {
	var id string
	err := t.queryRow(`SELECT schedule_id FROM schedule_runs WHERE run_id = ? AND run_id <> '' LIMIT 1`, runID).Scan(&id)
	if err != nil {
		return "", rowError("schedule of run", err)
	}
	return id, nil
}

// ScheduleAgents returns the agents a schedule's firings ran on that still exist, the
// one fired most recently first.
func (t *Tx) ScheduleAgents(scheduleID string) ([]string, error) {
	return queryAll(t, nil, "schedule agents", scanString, `SELECT r.agent_id FROM schedule_runs r JOIN agents a ON a.id = r.agent_id
		WHERE r.schedule_id = ? AND r.agent_id <> ''
		GROUP BY r.agent_id ORDER BY MAX(r.scheduled_at) DESC, MAX(r.rowid) DESC`, scheduleID)
}
