package store

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/api"
)

func TestMemoriesRoundTrip(t *testing.T) {
	s, a := seeded(t)
	var committed []string
	mustTx(t, s, func(tx *Tx) error {
		for i, m := range []Memory{
			{ID: "m-1", AgentID: a.ID, Kind: "note", Text: "the deploy key is in vault", Source: "memory_add"},
			{ID: "m-2", AgentID: "", Kind: "note", Text: "shared fact"},
			{ID: "m-3", AgentID: a.ID, Kind: "file", Text: "chunk", Source: "notes.txt"},
			{ID: "m-4", AgentID: "other", Kind: "note", Text: "someone else's"},
		} {
			m.Created = tx.Now().Add(time.Duration(i-4) * time.Second)
			if err := tx.InsertMemory(&m); err != nil {
				return err
			}
			id := m.ID
			tx.AfterCommit(func() { committed = append(committed, id) })
		}
		return nil
	})
	if len(committed) != 4 {
		t.Fatalf("after-commit hooks ran for %v, want all four", committed)
	}
	mustView(t, s, func(tx *Tx) error {
		own, err := tx.Memories(MemoryFilter{AgentID: a.ID})
		if err != nil {
			return err
		}
		if got := ids(own); got != "m-3 m-2 m-1" {
			t.Errorf("agent's and shared memories, newest first = %s", got)
		}
		only, _ := tx.Memories(MemoryFilter{AgentID: a.ID, OnlyOwn: true, Kind: "note"})
		if got := ids(only); got != "m-1" {
			t.Errorf("own notes = %s", got)
		}
		all, _ := tx.Memories(MemoryFilter{AllAgents: true, Limit: 2})
		if got := ids(all); got != "m-4 m-3" {
			t.Errorf("all, limit 2 = %s", got)
		}
		page, _ := tx.MemoryPage("m-2", 10)
		if got := ids(page); got != "m-3 m-4" {
			t.Errorf("page after m-2 = %s", got)
		}
		return nil
	})
	mustTx(t, s, func(tx *Tx) error {
		got, err := tx.DeleteMemories(a.ID, "file", "notes.txt")
		if err != nil || strings.Join(got, " ") != "m-3" {
			t.Errorf("DeleteMemories(file notes.txt) = %v, %v", got, err)
		}
		if ok, _ := tx.DeleteMemory("m-1"); !ok {
			t.Error("DeleteMemory(m-1) found nothing")
		}
		if ok, _ := tx.DeleteMemory("m-1"); ok {
			t.Error("DeleteMemory(m-1) twice found it again")
		}
		if _, err := tx.Memory("m-1"); !errors.Is(err, ErrNotFound) {
			t.Errorf("Memory(deleted) = %v, want ErrNotFound", err)
		}
		n, _ := tx.CountMemories()
		if n != 2 {
			t.Errorf("CountMemories = %d, want 2", n)
		}
		return nil
	})
}

func TestMemoryKindChecked(t *testing.T) {
	s, _ := open(t)
	err := s.Tx(context.Background(), func(tx *Tx) error {
		return tx.InsertMemory(&Memory{ID: "m-x", Kind: "gossip", Text: "x"})
	})
	if err == nil {
		t.Fatal("a memory of unknown kind was stored")
	}
}

func TestAfterCommitSkippedOnRollback(t *testing.T) {
	s, _ := open(t)
	ran := false
	err := s.Tx(context.Background(), func(tx *Tx) error {
		tx.AfterCommit(func() { ran = true })
		return fmt.Errorf("boom")
	})
	if err == nil || ran {
		t.Fatalf("err = %v, hook ran = %v; want an error and no hook", err, ran)
	}
}

func TestAfterCommitOfAReadRunsOnlyWhenItEndsWell(t *testing.T) {
	s, _ := open(t)
	for _, fail := range []bool{false, true} {
		ran := false
		err := s.View(context.Background(), func(tx *Tx) error {
			tx.AfterCommit(func() { ran = true })
			if fail {
				return fmt.Errorf("boom")
			}
			return nil
		})
		if (err != nil) != fail || ran == fail {
			t.Errorf("read failing %v: err = %v, hook ran = %v; want the hook to run only after a read that ends well", fail, err, ran)
		}
	}
}

func TestEpisodeLinesWithSummaries(t *testing.T) {
	s, a := seeded(t)
	ctx := context.Background()
	mustTx(t, s, func(tx *Tx) error {
		for i := 1; i <= 5; i++ {
			e := &api.Episode{RunID: "r-1", Step: i, ProposalID: fmt.Sprint("p-", i), Command: "read_file",
				Args: []byte(`{"path":"x"}`), Outcome: "succeeded", Result: strings.Repeat("é", 50)}
			if err := tx.InsertEpisode(a.ID, e); err != nil {
				return err
			}
		}
		return nil
	})
	var lines []EpisodeLine
	s.View(ctx, func(tx *Tx) (err error) { lines, err = tx.EpisodeLines(a.ID, 3, 10); return })
	if len(lines) != 3 || lines[0].Step != 3 || lines[2].Step != 5 {
		t.Fatalf("last 3 lines = %+v", lines)
	}
	if lines[0].Result != strings.Repeat("é", 10) {
		t.Errorf("result cut to 10 characters = %q", lines[0].Result)
	}
	mustTx(t, s, func(tx *Tx) error { return tx.SetEpisodeSummary(a.ID, lines[0].ID, "read x") })
	s.View(ctx, func(tx *Tx) (err error) { lines, err = tx.EpisodeLines(a.ID, 3, 10); return })
	if lines[0].Summary != "read x" || lines[1].Summary != "" {
		t.Errorf("summaries = %q, %q", lines[0].Summary, lines[1].Summary)
	}
}

func ids(ms []Memory) string {
	var out []string
	for _, m := range ms {
		out = append(out, m.ID)
	}
	return strings.Join(out, " ")
}

// The queries every step runs must find their rows through an index, never by scanning an
// agent's memories or episodes: a cost that grows with every step would end up dominating
// the step (replacing a written file's memories scanned all its file memories).
func TestStepQueriesUseAnIndex(t *testing.T) {
	s, _ := open(t)
	for _, c := range []struct{ name, query, want string }{
		{"delete_file_memories", `DELETE FROM memories WHERE agent_id='a' AND kind='file' AND source='notes.txt' RETURNING id`,
			"source=?"},
		{"latest_episodes", `SELECT e.id FROM episodes e LEFT JOIN episode_summaries s ON s.episode_id = e.id
			WHERE e.agent_id='a' ORDER BY e.id DESC LIMIT 4`, "agent_id=?"},
	} {
		t.Run(c.name, func(t *testing.T) {
			rows, err := s.db.Query(`EXPLAIN QUERY PLAN ` + c.query)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			var plan []string
			for rows.Next() {
				var id, parent, notused int
				var detail string
				if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
					t.Fatal(err)
				}
				plan = append(plan, detail)
			}
			for _, d := range plan {
				if strings.HasPrefix(d, "SCAN ") || strings.Contains(d, "TEMP B-TREE") {
					t.Errorf("query plan %q: want every table searched through an index, in index order", plan)
				}
			}
			if !strings.Contains(plan[0], c.want) {
				t.Errorf("query plan %q: want its index to cover %s", plan, c.want)
			}
		})
	}
}

// Tags survive a round trip; an agent's own pages leave the shared memories out; stats
// count per agent and kind, with sizes in bytes and the time span.
func TestMemoryTagsPagesAndStats(t *testing.T) {
	s, a := seeded(t)
	t0 := time.Date(2023, 5, 8, 13, 56, 0, 0, time.UTC)
	mustTx(t, s, func(tx *Tx) error {
		for _, m := range []Memory{
			{ID: "m-1", AgentID: a.ID, Kind: "chat", Text: "héllo", Source: "Ann", Created: t0, Tags: []string{"x", "y"}},
			{ID: "m-2", AgentID: a.ID, Kind: "note", Text: "abc", Created: t0.Add(48 * time.Hour)},
			{ID: "m-3", AgentID: a.ID, Kind: "chat", Text: "d", Created: t0.Add(-time.Hour)},
			{ID: "m-4", Kind: "note", Text: "shared", Created: t0},
		} {
			if err := tx.InsertMemory(&m); err != nil {
				return err
			}
		}
		return nil
	})
	mustView(t, s, func(tx *Tx) error {
		m, err := tx.Memory("m-1")
		if err != nil || !reflect.DeepEqual(m.Tags, []string{"x", "y"}) {
			t.Errorf("m-1 = %+v, %v; want its tags", m, err)
		}
		tags, err := tx.MemoryTags([]string{"m-1", "m-2", "nope"})
		if err != nil || !reflect.DeepEqual(tags, map[string][]string{"m-1": {"x", "y"}}) {
			t.Errorf("MemoryTags = %v, %v", tags, err)
		}
		page, err := tx.MemoryPageOf(a.ID, "m-1", 1)
		if err != nil || len(page) != 1 || page[0].ID != "m-2" {
			t.Errorf("MemoryPageOf after m-1 = %+v, %v; want m-2 alone", page, err)
		}
		st, err := tx.MemoryStatsByAgent()
		if err != nil || len(st) != 2 {
			t.Fatalf("stats = %+v, %v", st, err)
		}
		shared, own := st[0], st[1] // agent_id '' sorts first
		if shared.AgentID != "" || shared.Count != 1 || shared.Bytes != 6 {
			t.Errorf("shared stats = %+v", shared)
		}
		want := MemoryAgentStats{AgentID: a.ID, Count: 3, Bytes: 6 + 3 + 1, Oldest: t0.Add(-time.Hour), Newest: t0.Add(48 * time.Hour),
			Kinds: map[string]int{"chat": 2, "note": 1}}
		if !reflect.DeepEqual(own, want) {
			t.Errorf("agent stats = %+v, want %+v (bytes, not characters)", own, want)
		}
		return nil
	})
}

// A memory's speaker and context are kept beside its text and read back everywhere.
func TestMemorySpeakerAndContextRoundTrip(t *testing.T) {
	s, a := seeded(t)
	ctx := context.Background()
	want := Memory{ID: "m-ana", AgentID: a.ID, Kind: "chat", Text: "the deadline moved to Friday",
		Source: "slack message from Ana", Speaker: "Ana", Context: "Bo: when is the deadline?"}
	mustTx(t, s, func(tx *Tx) error { return tx.InsertMemory(&want) })
	s.View(ctx, func(tx *Tx) error {
		got, err := tx.Memory("m-ana")
		if err != nil || got.Speaker != want.Speaker || got.Context != want.Context {
			t.Errorf("Memory = %+v, %v; want speaker %q and context %q", got, err, want.Speaker, want.Context)
		}
		page, _ := tx.MemoryPage("", 10)
		if len(page) != 1 || page[0].Speaker != "Ana" || page[0].Context != want.Context {
			t.Errorf("MemoryPage = %+v, want the speaker and context kept", page)
		}
		return nil
	})
}

// Chat memories written before the speaker column get their speaker from their source:
// an import's bare name, or the name at the end of the relay's "slack message from Ana".
func TestMigrationFillsChatSpeakers(t *testing.T) {
	ctx := context.Background()
	path, last := migratedUpTo(t, "ADD COLUMN speaker", `INSERT INTO memories (id, agent_id, kind, text, source, created_at) VALUES
		('m-1', 'a-1', 'chat', 'Rosa: I went', 'Rosa', 1),
		('m-2', 'a-1', 'chat', 'ship it friday', 'discord message from Ana Lima', 2),
		('m-3', 'a-1', 'note', 'a note', 'memory_add', 3)`)
	if last != 18 {
		t.Fatalf("the speaker migration is number %d: it shipped as number 19, keep it there", last+1)
	}
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.View(ctx, func(tx *Tx) error {
		for id, want := range map[string]string{"m-1": "Rosa", "m-2": "Ana Lima", "m-3": ""} {
			if m, err := tx.Memory(id); err != nil || m.Speaker != want {
				t.Errorf("%s's speaker = %q (%v), want %q", id, m.Speaker, err, want)
			}
		}
		return nil
	})
}
