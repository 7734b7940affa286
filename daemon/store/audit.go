package store

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/agentd/agentd/api"
)

// AuditFilter selects audit entries: of one agent ("" for all), at or after Since,
// newest Limit of them (0: 100), returned oldest first.
type AuditFilter struct {
	AgentID string
	Kind    string // one kind of entry ("decision", "executed" …); "" for all
	Since   time.Time
	Limit   int
	Before  int64 // entries with a lower id only; 0 for no bound
}

// AuditEntries lists audit entries; an entry keeps its agent id after the agent is
// removed, and the agent's name while it exists.
func (t *Tx) AuditEntries(f AuditFilter) ([]api.AuditEntry, error) {
	if f.Limit <= 0 {
		f.Limit = 100
	}
	since := msOrZero(f.Since)
	out, err := queryAll(t, []api.AuditEntry{}, "audit", func(sc scanner) (api.AuditEntry, error) {
		var e api.AuditEntry
		var at int64
		var detail string
		if err := sc.Scan(&e.ID, &at, &e.AgentID, &e.Agent, &e.Kind, &detail); err != nil {
			return e, fmt.Errorf("store: reading audit entry: %w", err)
		}
		e.At = fromMS(at)
		if json.Valid([]byte(detail)) {
			e.Detail = json.RawMessage(detail)
		} else {
			e.Detail, _ = json.Marshal(detail)
		}
		return e, nil
	}, `SELECT a.id, a.at, a.agent_id, COALESCE(g.name, ''), a.kind, a.detail
		FROM audit a LEFT JOIN agents g ON g.id = a.agent_id
		WHERE (? = '' OR a.agent_id = ?) AND (? = '' OR a.kind = ?) AND a.at >= ? AND (? = 0 OR a.id < ?)
		ORDER BY a.id DESC LIMIT ?`, f.AgentID, f.AgentID, f.Kind, f.Kind, since, f.Before, f.Before, f.Limit)
	slices.Reverse(out)
	return out, err
}

// Replay returns one run step by step: each proposal with its thoughts, every decision
// on it, and the episode it produced.
func (t *Tx) Replay(runID string) (*api.Replay, error) {
	var r api.Replay
	var started int64
	var ended sql.NullInt64
	err := t.queryRow(`SELECT r.id, r.agent_id, COALESCE(g.name, ''), r.task, r.started_at, r.ended_at, r.outcome, r.reason
		FROM runs r LEFT JOIN agents g ON g.id = r.agent_id WHERE r.id = ?`, runID).
		Scan(&r.Run.ID, &r.Run.AgentID, &r.Run.Agent, &r.Run.Task, &started, &ended, &r.Run.Outcome, &r.Run.Reason)
	if err != nil {
		return nil, rowError("reading run", err)
	}
	r.Run.StartedAt = fromMS(started)
	if ended.Valid {
		r.Run.EndedAt = fromMS(ended.Int64)
	}
	props, err := t.proposals(`run_id=?`, runID)
	if err != nil {
		return nil, err
	}
	byID := map[string]int{}
	for _, p := range props {
		byID[p.ID] = len(r.Steps)
		r.Steps = append(r.Steps, api.ReplayStep{Proposal: p, Decisions: []api.Decision{}})
	}
	err = eachRow(t, "replay decisions", func(sc scanner) error {
		d, err := scanDecision(sc)
		if err != nil {
			return fmt.Errorf("store: reading decision: %w", err)
		}
		if i, ok := byID[d.ProposalID]; ok {
			r.Steps[i].Decisions = append(r.Steps[i].Decisions, *d)
		}
		return nil
	}, `SELECT `+decisionCols+`
		FROM decisions d JOIN proposals p ON p.id = d.proposal_id WHERE p.run_id = ? ORDER BY d.id`, runID)
	if err != nil {
		return nil, err
	}
	eps, err := queryAll(t, nil, "replay episodes", scanEpisode, `SELECT `+episodeCols+` FROM episodes WHERE run_id = ? ORDER BY id`, runID)
	if err != nil {
		return nil, err
	}
	for i := range eps {
		if j, ok := byID[eps[i].ProposalID]; ok {
			r.Steps[j].Episode = &eps[i]
		}
	}
	if r.Steps == nil {
		r.Steps = []api.ReplayStep{}
	}
	return &r, nil
}

// Runs lists an agent's runs, newest first, at most limit (0: all).
func (t *Tx) Runs(agentID string, limit int) ([]api.Run, error) {
	// A run still going has its counts on the agent's row, not yet on its own.
	q := `SELECT r.id, r.agent_id, r.task, r.started_at, r.ended_at, r.outcome, r.reason,
		CASE WHEN r.ended_at IS NULL AND a.run_id = r.id THEN a.step ELSE r.steps END,
		CASE WHEN r.ended_at IS NULL AND a.run_id = r.id THEN a.prompt_tokens + a.eval_tokens - r.tokens_base ELSE r.tokens END,
		r.max_steps, r.max_tokens, r.max_wall_ms
		FROM runs r JOIN agents a ON a.id = r.agent_id WHERE r.agent_id = ? ORDER BY r.started_at DESC, r.rowid DESC`
	args := []any{agentID}
	if limit > 0 {
		q += ` LIMIT ?`
		args = append(args, limit)
	}
	return queryAll(t, []api.Run{}, "list runs", func(sc scanner) (api.Run, error) {
		var r api.Run
		var started int64
		var ended sql.NullInt64
		var b api.Budget
		var wall int64
		if err := sc.Scan(&r.ID, &r.AgentID, &r.Task, &started, &ended, &r.Outcome, &r.Reason, &r.Steps, &r.Tokens,
			&b.MaxSteps, &b.MaxTokens, &wall); err != nil {
			return r, fmt.Errorf("store: reading run: %w", err)
		}
		if wall > 0 {
			b.MaxTime = (time.Duration(wall) * time.Millisecond).String()
		}
		if b != (api.Budget{}) {
			r.Budget = &b
		}
		r.StartedAt = fromMS(started)
		if ended.Valid {
			r.EndedAt = fromMS(ended.Int64)
		}
		return r, nil
	}, q, args...)
}
