package store

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentd/agentd/api"
)

// Memory is one row of memories: what an agent did, was told, saved or wrote, kept here
// first and indexed by the memory package from here.
type Memory struct {
	ID      string
	AgentID string // "" for a shared memory
	Kind    string // episode, result, feedback, note, chat or file
	Text    string
	Source  string // where it came from: a step, a file path, a person
	Created time.Time
	Tags    []string // labels given by an import; nil for none
	// Speaker is who said it (a chat message's author, an imported turn's speaker); "" for
	// none. Context is the turn before it in the same conversation, indexed beside it.
	Speaker string
	Context string
}

// decodeTags reads the tags column: a JSON array written by InsertMemory, empty for none.
func decodeTags(raw string) []string {
	var tags []string
	if raw != "" {
		_ = json.Unmarshal([]byte(raw), &tags)
	}
	return tags
}

const memoryCols = `id, agent_id, kind, text, source, created_at, tags, speaker, context`

func scanMemory(sc scanner) (Memory, error) {
	var m Memory
	var created int64
	var tags string
	err := sc.Scan(&m.ID, &m.AgentID, &m.Kind, &m.Text, &m.Source, &created, &tags, &m.Speaker, &m.Context)
	m.Tags = decodeTags(tags)
	if err != nil {
		return m, rowError("reading memory", err)
	}
	m.Created = fromMS(created)
	return m, nil
}

// InsertMemory stores a memory; storing an id again replaces it. A zero Created is the
// transaction's time.
func (t *Tx) InsertMemory(m *Memory) error {
	if m.Created.IsZero() {
		m.Created = t.now
	}
	return t.write("insert memory", `INSERT OR REPLACE INTO memories (`+memoryCols+`) VALUES (?,?,?,?,?,?,?,?,?)`,
		m.ID, m.AgentID, m.Kind, m.Text, m.Source, ms(m.Created), jsOr(len(m.Tags) == 0, m.Tags), m.Speaker, m.Context)
}

// Memory reads one memory by id.
func (t *Tx) Memory(id string) (Memory, error) {
	return scanMemory(t.queryRow(`SELECT `+memoryCols+` FROM memories WHERE id=?`, id))
}

// MemoryFilter selects memories to list. The zero value lists shared memories only.
type MemoryFilter struct {
	AgentID   string // this agent's memories and the shared ones
	AllAgents bool   // every memory; AgentID is ignored
	OnlyOwn   bool   // with AgentID: leave the shared ones out
	Kind      string // "" for every kind
	Source    string // "" for every source
	Limit     int    // newest first; <= 0 means 100
}

// Memories lists memories matching f, newest first.
func (t *Tx) Memories(f MemoryFilter) ([]Memory, error) {
	var where []string
	var args []any
	switch {
	case f.AllAgents:
	case f.OnlyOwn:
		where, args = append(where, `agent_id=?`), append(args, f.AgentID)
	default:
		where, args = append(where, `agent_id IN ('', ?)`), append(args, f.AgentID)
	}
	if f.Kind != "" {
		where, args = append(where, `kind=?`), append(args, f.Kind)
	}
	if f.Source != "" {
		where, args = append(where, `source=?`), append(args, f.Source)
	}
	if f.Limit <= 0 {
		f.Limit = 100
	}
	q := `SELECT ` + memoryCols + ` FROM memories`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, ` AND `)
	}
	q += ` ORDER BY created_at DESC, id DESC LIMIT ?`
	return t.memories(q, append(args, f.Limit)...)
}

func (t *Tx) memories(q string, args ...any) ([]Memory, error) {
	return queryAll(t, nil, "list memories", scanMemory, q, args...)
}

// MemoryPage returns up to limit memories with ids after the given one, in id order: a
// rebuild reads the table in pages, each its own short transaction, so writers never wait
// for a whole rebuild.
func (t *Tx) MemoryPage(after string, limit int) ([]Memory, error) {
	return t.memories(`SELECT `+memoryCols+` FROM memories WHERE id>? ORDER BY id LIMIT ?`, after, limit)
}

// CountMemories counts every memory.
func (t *Tx) CountMemories() (int, error) {
	var n int
	err := t.queryRow(`SELECT COUNT(*) FROM memories`).Scan(&n)
	return n, err
}

// DeleteMemory removes one memory; it reports whether there was one.
func (t *Tx) DeleteMemory(id string) (bool, error) {
	return t.affected("delete memory", `DELETE FROM memories WHERE id=?`, id)
}

// DeleteMemories removes the agent's own memories (all of them, or those of one kind and
// source when kind is set) and returns their ids, for the index.
func (t *Tx) DeleteMemories(agentID, kind, source string) ([]string, error) {
	where, args := `agent_id=?`, []any{agentID}
	if kind != "" {
		where, args = where+` AND kind=? AND source=?`, append(args, kind, source)
	}
	ids, err := queryAll(t, nil, "delete memories", scanString, `DELETE FROM memories WHERE `+where+` RETURNING id`, args...)
	if err != nil {
		return nil, fmt.Errorf("store: delete memories: %w", err)
	}
	return ids, nil
}

// EpisodeLine is an episode as the prompt's history shows it: its row id, the episode
// (its result cut to resultChars) and the model's one-line summary, "" until made.
type EpisodeLine struct {
	ID int64
	api.Episode
	Summary string
}

// EpisodeLines returns the agent's last limit episodes with their summaries, oldest first.
// Results longer than resultChars characters are cut: the prompt never shows more.
func (t *Tx) EpisodeLines(agentID string, limit, resultChars int) ([]EpisodeLine, error) {
	out, err := queryAll(t, nil, "list episodes", func(sc scanner) (EpisodeLine, error) {
		var e EpisodeLine
		var args string
		var at int64
		if err := sc.Scan(&e.ID, &e.RunID, &e.Step, &e.ProposalID, &e.Command, &args, &e.Reasoning, &e.Outcome,
			&e.Result, &e.Feedback, &at, &e.Summary); err != nil {
			return e, fmt.Errorf("store: reading episode: %w", err)
		}
		e.Args, e.At = json.RawMessage(args), fromMS(at)
		return e, nil
	}, `SELECT e.id, e.run_id, e.step, e.proposal_id, e.command, e.args, e.reasoning, e.outcome,
		substr(e.result, 1, ?), substr(e.feedback, 1, ?), e.at, COALESCE(s.line, '')
		FROM episodes e LEFT JOIN episode_summaries s ON s.episode_id = e.id
		WHERE e.agent_id=? ORDER BY e.id DESC LIMIT ?`, resultChars, resultChars, agentID, limit)
	slices.Reverse(out)
	return out, err
}

// EpisodeHead is an episode as an older history line shows it: no reasoning or result.
type EpisodeHead struct {
	ID      int64
	Step    int
	Command string
	Args    json.RawMessage
	Outcome string
	Summary string
}

// EpisodeHeads returns the agent's episodes before its newest skip ones, newest first, at
// most limit of them: the light read behind the history's one-line entries.
func (t *Tx) EpisodeHeads(agentID string, skip, limit int) ([]EpisodeHead, error) {
	return t.episodeHeads(`e.agent_id=? ORDER BY e.id DESC LIMIT ? OFFSET ?`, agentID, limit, skip)
}

// EpisodeHeadsAfter returns the agent's episodes newer than episode id after, newest
// first, at most limit of them.
func (t *Tx) EpisodeHeadsAfter(agentID string, after int64, limit int) ([]EpisodeHead, error) {
	return t.episodeHeads(`e.agent_id=? AND e.id > ? ORDER BY e.id DESC LIMIT ?`, agentID, after, limit)
}

func (t *Tx) episodeHeads(where string, args ...any) ([]EpisodeHead, error) {
	return queryAll(t, nil, "list episodes", func(sc scanner) (EpisodeHead, error) {
		var e EpisodeHead
		var raw string
		if err := sc.Scan(&e.ID, &e.Step, &e.Command, &raw, &e.Outcome, &e.Summary); err != nil {
			return e, fmt.Errorf("store: reading episode: %w", err)
		}
		e.Args = json.RawMessage(raw)
		return e, nil
	}, `SELECT e.id, e.step, e.command, e.args, e.outcome, COALESCE(s.line, '')
		FROM episodes e LEFT JOIN episode_summaries s ON s.episode_id = e.id WHERE `+where, args...)
}

// SetEpisodeSummary stores the one-line summary of an episode.
func (t *Tx) SetEpisodeSummary(agentID string, episodeID int64, line string) error {
	return t.write("episode summary", `INSERT OR REPLACE INTO episode_summaries (episode_id, agent_id, line) VALUES (?,?,?)`, episodeID, agentID, line)
}
