package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/api"
)

func TestMemoriesRoundTrip(t *testing.T) {
	s, _ := open(t)
	a := seed(t, s)
	ctx := context.Background()
	var committed []string
	err := s.Tx(ctx, func(tx *Tx) error {
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
	if err != nil {
		t.Fatal(err)
	}
	if len(committed) != 4 {
		t.Fatalf("after-commit hooks ran for %v, want all four", committed)
	}
	err = s.View(ctx, func(tx *Tx) error {
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
	if err != nil {
		t.Fatal(err)
	}
	err = s.Tx(ctx, func(tx *Tx) error {
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
	if err != nil {
		t.Fatal(err)
	}
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
	s, _ := open(t)
	a := seed(t, s)
	ctx := context.Background()
	err := s.Tx(ctx, func(tx *Tx) error {
		for i := 1; i <= 5; i++ {
			e := &api.Episode{RunID: "r-1", Step: i, ProposalID: fmt.Sprint("p-", i), Command: "read_file",
				Args: []byte(`{"path":"x"}`), Outcome: "succeeded", Result: strings.Repeat("é", 50)}
			if err := tx.InsertEpisode(a.ID, e); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var lines []EpisodeLine
	s.View(ctx, func(tx *Tx) (err error) { lines, err = tx.EpisodeLines(a.ID, 3, 10); return })
	if len(lines) != 3 || lines[0].Step != 3 || lines[2].Step != 5 {
		t.Fatalf("last 3 lines = %+v", lines)
	}
	if lines[0].Result != strings.Repeat("é", 10) {
		t.Errorf("result cut to 10 characters = %q", lines[0].Result)
	}
	err = s.Tx(ctx, func(tx *Tx) error { return tx.SetEpisodeSummary(a.ID, lines[0].ID, "read x") })
	if err != nil {
		t.Fatal(err)
	}
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
