package store

import (
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// WakeState is what a schedule's wake conditions saw (daemon/schedule/wake keeps it).
type WakeState struct {
	ScheduleID string
	// Seen is, per condition, what the last run that started saw: the wake engine's
	// JSON, "{}" when no run started since the conditions were set.
	Seen   string
	SeenAt time.Time // when the run that saw it started; zero if none did
	// Failures counts the firings in a row whose check failed; LastError and FailedAt
	// are the latest failure's.
	Failures  int
	LastError string
	FailedAt  time.Time
}

// WakeState reads a schedule's wake state; a schedule whose conditions never ran has
// none (ErrNotFound).
func (t *Tx) WakeState(scheduleID string) (*WakeState, error) {
	w := WakeState{ScheduleID: scheduleID}
	var seenAt, failedAt int64
	err := t.queryRow(`SELECT seen, seen_at, failures, last_error, failed_at FROM schedule_wake WHERE schedule_id=?`,
		scheduleID).Scan(&w.Seen, &seenAt, &w.Failures, &w.LastError, &failedAt)
	if err != nil {
		return nil, rowError("wake state", err)
	}
	w.SeenAt, w.FailedAt = fromMSOrZero(seenAt), fromMSOrZero(failedAt)
	return &w, nil
}

// SetWakeSeen stores what a schedule's conditions saw when its run started. A schedule
// removed meanwhile gets none.
func (t *Tx) SetWakeSeen(scheduleID, seen string) error {
	_, err := t.exec(`INSERT INTO schedule_wake (schedule_id, seen, seen_at) SELECT ?,?,?
		WHERE EXISTS (SELECT 1 FROM schedules WHERE id=?)
		ON CONFLICT (schedule_id) DO UPDATE SET seen=excluded.seen, seen_at=excluded.seen_at`,
		scheduleID, seen, ms(t.now), scheduleID)
	if err != nil {
		return fmt.Errorf("store: set wake state: %w", err)
	}
	return nil
}

// WakeCheckFailed counts a firing whose check failed with problem and returns how many
// failed in a row, this one included (0 when the schedule was removed meanwhile).
func (t *Tx) WakeCheckFailed(scheduleID, problem string) (int, error) {
	var n int
	err := t.queryRow(`INSERT INTO schedule_wake (schedule_id, failures, last_error, failed_at) SELECT ?,1,?,?
		WHERE EXISTS (SELECT 1 FROM schedules WHERE id=?)
		ON CONFLICT (schedule_id) DO UPDATE SET failures=failures+1, last_error=excluded.last_error,
			failed_at=excluded.failed_at
		RETURNING failures`, scheduleID, problem, ms(t.now), scheduleID).Scan(&n)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("store: count a failed check: %w", err)
	}
	return n, nil
}

// WakeCheckPassed ends a schedule's run of failed checks; the last error stays on record.
func (t *Tx) WakeCheckPassed(scheduleID string) error {
	if _, err := t.exec(`UPDATE schedule_wake SET failures=0 WHERE schedule_id=? AND failures<>0`, scheduleID); err != nil {
		return fmt.Errorf("store: end failed checks: %w", err)
	}
	return nil
}
