package memory

import (
	"context"
	"testing"
)

// A search serves a memory's stored fields from the hit cache once it has loaded them, and
// never an old text: a memory replaced or deleted is loaded again, and what a search that
// began before a batch loaded is not kept.
func TestHitCacheNeverServesAnOldText(t *testing.T) {
	ix := open(t, Options{})
	ctx := context.Background()
	add := func(text string) {
		t.Helper()
		if err := ix.Add(Doc{ID: "m-1", Agent: "a", Kind: KindNote, Text: text}); err != nil {
			t.Fatal(err)
		}
		if err := ix.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	text := func() string {
		t.Helper()
		hits := find(t, ix, Query{Agent: "a", Text: "kiln"})
		if len(hits) == 0 {
			return ""
		}
		return hits[0].Text
	}
	add("the kiln is cold")
	if got := text(); got != "the kiln is cold" {
		t.Fatalf("first search: %q", got)
	}
	if _, ok := ix.live().hits.get("m-1"); !ok {
		t.Fatal("the memory a search loaded is not in the hit cache")
	}
	add("the kiln is hot") // the same id, replaced
	if got := text(); got != "the kiln is hot" {
		t.Errorf("after the memory was replaced the search shows %q", got)
	}
	if err := ix.Delete("m-1"); err != nil {
		t.Fatal(err)
	}
	if err := ix.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got := text(); got != "" {
		t.Errorf("after the memory was deleted the search shows %q", got)
	}

	var c hitCache
	began := c.begin()
	c.invalidate([]string{"m-2"}) // a batch came in while the search ran
	c.put(map[string]Hit{"m-2": {ID: "m-2", Text: "old"}}, began)
	if h, ok := c.get("m-2"); ok {
		t.Errorf("a search that began before a batch cached %q", h.Text)
	}
}
