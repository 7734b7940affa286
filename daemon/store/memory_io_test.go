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
