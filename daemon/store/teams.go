package store

import (
	"encoding/json"
	"fmt"

	"github.com/agentd/agentd/api"
)

// TeamRun is a team_runs row: the wire type plus what only the engine reads.
type TeamRun struct {
	api.TeamRun
	Source string // the workflow file's text
	// Cursor is the engine's position in the workflow (daemon/team decodes it).
	Cursor json.RawMessage
	// WaitRun is the role agent's run the team waits for ("" when none); its agent is
	// TeamRun.Waiting.
	WaitRun   string
	CreatedBy string
}

// TeamTurn is a team_turns row.
type TeamTurn struct {
	api.TeamTurn
	TeamRunID string
	PhaseSeq  int // which phase instance of the run the turn belongs to
}

const teamRunCols = `id, workflow, file, source, task, status, reason, state, phase, vars, agents, cursor, turns,
	max_turns, wait_agent, wait_run, created_by, created_at, updated_at, ended_at, keep_agents`

func scanTeamRun(sc scanner) (*TeamRun, error) {
	var r TeamRun
	var vars, agents, cursor string
	var created, updated, ended int64
	err := sc.Scan(&r.ID, &r.Workflow, &r.File, &r.Source, &r.Task, &r.Status, &r.Reason, &r.State, &r.Phase,
		&vars, &agents, &cursor, &r.Turns, &r.MaxTurns, &r.Waiting, &r.WaitRun, &r.CreatedBy, &created, &updated, &ended, &r.KeepAgents)
	if err != nil {
		return nil, rowError("reading team run", err)
	}
	if err := json.Unmarshal([]byte(vars), &r.Vars); err != nil {
		return nil, fmt.Errorf("store: team run %s: vars: %w", r.ID, err)
	}
	if err := json.Unmarshal([]byte(agents), &r.Agents); err != nil {
		return nil, fmt.Errorf("store: team run %s: agents: %w", r.ID, err)
	}
	r.Cursor = json.RawMessage(cursor)
	r.CreatedAt, r.UpdatedAt, r.EndedAt = fromMS(created), fromMS(updated), fromMSOrZero(ended)
	return &r, nil
}

func teamJSON(r *TeamRun) (vars, agents, cursor string, err error) {
	v, err := json.Marshal(nonNilMap(r.Vars))
	if err != nil {
		return "", "", "", err
	}
	a, err := json.Marshal(nonNilMap(r.Agents))
	if err != nil {
		return "", "", "", err
	}
	c := string(r.Cursor)
	if c == "" {
		c = "{}"
	}
	return string(v), string(a), c, nil
}

func nonNilMap(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

// InsertTeamRun stores a new team run; it sets its times.
func (t *Tx) InsertTeamRun(r *TeamRun) error {
	vars, agents, cursor, err := teamJSON(r)
	if err != nil {
		return fmt.Errorf("store: insert team run: %w", err)
	}
	r.CreatedAt, r.UpdatedAt = t.now, t.now
	_, err = t.exec(`INSERT INTO team_runs (`+teamRunCols+`) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,0,?)`,
		r.ID, r.Workflow, r.File, r.Source, r.Task, r.Status, r.Reason, r.State, r.Phase, vars, agents, cursor,
		r.Turns, r.MaxTurns, r.Waiting, r.WaitRun, r.CreatedBy, ms(t.now), ms(t.now), r.KeepAgents)
	if err != nil {
		return fmt.Errorf("store: insert team run: %w", err)
	}
	return nil
}

// UpdateTeamRun writes a team run's mutable fields; a final status sets its end time.
func (t *Tx) UpdateTeamRun(r *TeamRun) error {
	vars, agents, cursor, err := teamJSON(r)
	if err != nil {
		return fmt.Errorf("store: update team run: %w", err)
	}
	r.UpdatedAt = t.now
	if r.Status != api.TeamRunning && r.EndedAt.IsZero() {
		r.EndedAt = t.now
	}
	ok, err := t.affected("update team run", `UPDATE team_runs SET status=?, reason=?, state=?, phase=?, vars=?, agents=?, cursor=?, turns=?,
		wait_agent=?, wait_run=?, updated_at=?, ended_at=? WHERE id=?`,
		r.Status, r.Reason, r.State, r.Phase, vars, agents, cursor, r.Turns, r.Waiting, r.WaitRun, ms(t.now), msOrZero(r.EndedAt), r.ID)
	if err == nil && !ok {
		return ErrNotFound
	}
	return err
}

// TeamRun reads one team run (without its transcript).
func (t *Tx) TeamRun(id string) (*TeamRun, error) {
	return scanTeamRun(t.queryRow(`SELECT `+teamRunCols+` FROM team_runs WHERE id=?`, id))
}

// TeamRuns lists team runs, newest first; running only lists those still running.
func (t *Tx) TeamRuns(running bool) ([]*TeamRun, error) {
	q := `SELECT ` + teamRunCols + ` FROM team_runs ORDER BY created_at DESC, id`
	if running {
		q = `SELECT ` + teamRunCols + ` FROM team_runs WHERE status='running' ORDER BY created_at, id`
	}
	return queryAll(t, nil, "team runs", scanTeamRun, q)
}

// InsertTeamTurn appends a turn to a team run's transcript; Seq must be the next one.
func (t *Tx) InsertTeamTurn(tt *TeamTurn) error {
	tt.At = t.now
	return t.write("insert team turn", `INSERT INTO team_turns (team_run_id, seq, kind, state, phase, phase_seq, cycle, role, agent_id,
		run_id, text, mode, at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)`,
		tt.TeamRunID, tt.Seq, tt.Kind, tt.State, tt.Phase, tt.PhaseSeq, tt.Cycle, tt.Role, tt.AgentID, tt.RunID,
		tt.Text, tt.Mode, ms(t.now))
}

// TeamTurns returns a team run's turns, oldest first: all of them (phaseSeq < 0) or those
// of one phase instance.
func (t *Tx) TeamTurns(runID string, phaseSeq int) ([]TeamTurn, error) {
	q := `SELECT seq, kind, state, phase, phase_seq, cycle, role, agent_id, run_id, text, mode, at
		FROM team_turns WHERE team_run_id=? AND (?<0 OR phase_seq=?) ORDER BY seq`
	return queryAll(t, nil, "team turns", func(sc scanner) (TeamTurn, error) {
		tt := TeamTurn{TeamRunID: runID}
		var at int64
		if err := sc.Scan(&tt.Seq, &tt.Kind, &tt.State, &tt.Phase, &tt.PhaseSeq, &tt.Cycle, &tt.Role, &tt.AgentID,
			&tt.RunID, &tt.Text, &tt.Mode, &at); err != nil {
			return tt, fmt.Errorf("store: team turns: %w", err)
		}
		tt.At = fromMS(at)
		return tt, nil
	}, q, runID, phaseSeq, phaseSeq)
}
