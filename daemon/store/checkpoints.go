package store

import (
	"database/sql"
	"time"
)

// StepCheckpoint is the workspace checkpoint taken before a step that may change it, and
// once the step ended what it changed. A rewind has one too (Kind "rewind", ID rw-…): its
// Before is the workspace as the rewind found it, so the rewind can be undone.
type StepCheckpoint struct {
	ID      string // the step's proposal id, or the rewind's
	AgentID string
	RunID   string
	Step    int
	Kind    string // "step" or "rewind"
	// Before is the checkpoint (daemon/checkpoint ID) of the workspace just before; After
	// the one just after (0 while the step runs, or when its end was never recorded).
	Before, After uint64
	// Files counts the paths changed; Added and Removed the text lines.
	Files, Added, Removed int
	// Notice says what the checkpoints could not capture ("" when whole).
	Notice string
	At     time.Time
}

// Step checkpoint kinds.
const (
	CheckpointStep   = "step"
	CheckpointRewind = "rewind"
)

const stepCheckpointCols = `id, agent_id, run_id, step, kind, before_id, after_id, files, added, removed, notice, at`

// InsertStepCheckpoint records c (again, when a retried transaction took it twice).
func (t *Tx) InsertStepCheckpoint(c *StepCheckpoint) error {
	c.At = t.now
	return t.write("insert step checkpoint", `INSERT OR REPLACE INTO step_checkpoints (`+stepCheckpointCols+`) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)`,
		c.ID, c.AgentID, c.RunID, c.Step, c.Kind, int64(c.Before), int64(c.After), c.Files, c.Added, c.Removed, c.Notice, ms(t.now))
}

// StepCheckpointOf returns the checkpoint of step (or rewind) id, or ErrNotFound.
func (t *Tx) StepCheckpointOf(id string) (*StepCheckpoint, error) {
	return scanStepCheckpoint(t.queryRow(`SELECT `+stepCheckpointCols+` FROM step_checkpoints WHERE id=?`, id))
}

// StepCheckpointAt returns the checkpoint of the agent's step numbered step in run (""
// the latest run with that step), or with step 0 its latest step's; ErrNotFound when
// there is none.
func (t *Tx) StepCheckpointAt(agentID, run string, step int) (*StepCheckpoint, error) {
	if step == 0 {
		return scanStepCheckpoint(t.queryRow(`SELECT `+stepCheckpointCols+` FROM step_checkpoints
			WHERE agent_id=? AND kind=? AND (?='' OR run_id=?) ORDER BY at DESC, rowid DESC LIMIT 1`, agentID, CheckpointStep, run, run))
	}
	return scanStepCheckpoint(t.queryRow(`SELECT `+stepCheckpointCols+` FROM step_checkpoints
		WHERE agent_id=? AND step=? AND kind=? AND (?='' OR run_id=?) ORDER BY at DESC, rowid DESC LIMIT 1`, agentID, step, CheckpointStep, run, run))
}

// RunFirstCheckpoint returns the checkpoint of the first checkpointed step of the agent's
// run, or ErrNotFound: the workspace as it was before the run changed it.
func (t *Tx) RunFirstCheckpoint(agentID, run string) (*StepCheckpoint, error) {
	return scanStepCheckpoint(t.queryRow(`SELECT `+stepCheckpointCols+` FROM step_checkpoints
		WHERE agent_id=? AND run_id=? AND kind=? ORDER BY at ASC, rowid ASC LIMIT 1`, agentID, run, CheckpointStep))
}

// StepRuns returns the runs of the agent with a checkpointed step numbered step, the
// latest first: more than one makes the number ambiguous without its run.
func (t *Tx) StepRuns(agentID string, step int) ([]string, error) {
	return queryAll(t, nil, "step checkpoint runs", scanString, `SELECT run_id FROM step_checkpoints WHERE agent_id=? AND step=? AND kind=?
		GROUP BY run_id ORDER BY MAX(at) DESC, MAX(rowid) DESC`, agentID, step, CheckpointStep)
}

// RecentBefores returns the Before checkpoints of the agent's n latest steps and
// rewinds, newest first: what retention keeps so they stay in rewind range.
func (t *Tx) RecentBefores(agentID string, n int) ([]uint64, error) {
	return queryAll(t, nil, "reading step checkpoints", func(sc scanner) (uint64, error) {
		var id int64
		if err := sc.Scan(&id); err != nil {
			return 0, rowError("reading step checkpoints", err)
		}
		return uint64(id), nil
	}, `SELECT before_id FROM step_checkpoints WHERE agent_id=? AND before_id>0
		ORDER BY at DESC, rowid DESC LIMIT ?`, agentID, n)
}

func scanStepCheckpoint(row *sql.Row) (*StepCheckpoint, error) {
	var c StepCheckpoint
	var before, after, at int64
	if err := row.Scan(&c.ID, &c.AgentID, &c.RunID, &c.Step, &c.Kind, &before, &after, &c.Files, &c.Added, &c.Removed, &c.Notice, &at); err != nil {
		return nil, rowError("reading step checkpoint", err)
	}
	c.Before, c.After, c.At = uint64(before), uint64(after), fromMS(at)
	return &c, nil
}
