package store

import (
	"fmt"
	"strings"
	"time"
)

// Reads behind agentctl memory export and stats.

// MemoryPageOf is MemoryPage for one agent's own memories (shared ones have agentID "").
func (t *Tx) MemoryPageOf(agentID, after string, limit int) ([]Memory, error) {
	return t.memories(`SELECT `+memoryCols+` FROM memories WHERE agent_id=? AND id>? ORDER BY id LIMIT ?`, agentID, after, limit)
}

// MemoryAgentStats describes one agent's memories, or the shared ones (AgentID "").
type MemoryAgentStats struct {
	AgentID        string
	Count          int
	Bytes          int64 // of their text
	Oldest, Newest time.Time
	Kinds          map[string]int
}

// MemoryStatsByAgent describes the memories of every agent that has some, most first.
func (t *Tx) MemoryStatsByAgent() ([]MemoryAgentStats, error) {
	var out []MemoryAgentStats
	err := eachRow(t, "memory stats", func(sc scanner) error {
		var agent, kind string
		var n int
		var bytes, oldest, newest int64
		if err := sc.Scan(&agent, &kind, &n, &bytes, &oldest, &newest); err != nil {
			return fmt.Errorf("store: memory stats: %w", err)
		}
		if len(out) == 0 || out[len(out)-1].AgentID != agent {
			out = append(out, MemoryAgentStats{AgentID: agent, Kinds: map[string]int{}, Oldest: fromMS(oldest), Newest: fromMS(newest)})
		}
		s := &out[len(out)-1]
		s.Count += n
		s.Bytes += bytes
		s.Kinds[kind] = n
		if o := fromMS(oldest); o.Before(s.Oldest) {
			s.Oldest = o
		}
		if nw := fromMS(newest); nw.After(s.Newest) {
			s.Newest = nw
		}
		return nil
	}, `SELECT agent_id, kind, COUNT(*), SUM(length(CAST(text AS BLOB))), MIN(created_at), MAX(created_at)
		FROM memories GROUP BY agent_id, kind ORDER BY agent_id, kind`)
	return out, err
}

// MemoryTags returns the tags of the memories with these ids that have some.
func (t *Tx) MemoryTags(ids []string) (map[string][]string, error) {
	out := map[string][]string{}
	if len(ids) == 0 {
		return out, nil
	}
	q := `SELECT id, tags FROM memories WHERE tags <> '' AND id IN (?` + strings.Repeat(",?", len(ids)-1) + `)`
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	err := eachRow(t, "memory tags", func(sc scanner) error {
		var id, raw string
		if err := sc.Scan(&id, &raw); err != nil {
			return fmt.Errorf("store: memory tags: %w", err)
		}
		if tags := decodeTags(raw); tags != nil {
			out[id] = tags
		}
		return nil
	}, q, args...)
	return out, err
}
