package store

import (
	"context"
	"reflect"
	"testing"
	"time"
)

// Tags survive a round trip; an agent's own pages leave the shared memories out; stats
// count per agent and kind, with sizes in bytes and the time span.
func TestMemoryTagsPagesAndStats(t *testing.T) {
	s, _ := open(t)
	a := seed(t, s)
	ctx := context.Background()
	t0 := time.Date(2023, 5, 8, 13, 56, 0, 0, time.UTC)
	err := s.Tx(ctx, func(tx *Tx) error {
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
	if err != nil {
		t.Fatal(err)
	}
	err = s.View(ctx, func(tx *Tx) error {
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
	if err != nil {
		t.Fatal(err)
	}
}

// A memory's speaker and context are kept beside its text and read back everywhere.
func TestMemorySpeakerAndContextRoundTrip(t *testing.T) {
	s, _ := open(t)
	a := seed(t, s)
	ctx := context.Background()
	want := Memory{ID: "m-ana", AgentID: a.ID, Kind: "chat", Text: "the deadline moved to Friday",
		Source: "slack message from Ana", Speaker: "Ana", Context: "Bo: when is the deadline?"}
	if err := s.Tx(ctx, func(tx *Tx) error { return tx.InsertMemory(&want) }); err != nil {
		t.Fatal(err)
	}
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
