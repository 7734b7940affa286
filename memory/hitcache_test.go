package memory

import (
	"context"
	"fmt"
	"strings"
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

// A memory's analysis for Fit is made once and shared by the hits the cache gives out; a
// hit whose text was changed since is analyzed alone, and both fit the same.
func TestFitTextSharedOnce(t *testing.T) {
	shared := &fitText{}
	a := Hit{ID: "m", Text: "The  kiln\tis hot", an: shared, Score: 1}
	b := a
	if a.analyzed() != shared || b.analyzed() != shared || shared.text != "The kiln is hot" {
		t.Fatalf("analysis not shared: %+v", shared)
	}
	b.Text = "the kiln is cold"
	if an := b.analyzed(); an == shared || an.text != "the kiln is cold" || shared.text != "The kiln is hot" {
		t.Errorf("a changed text used the shared analysis: %q, shared %q", an.text, shared.text)
	}
	plain := Hit{ID: "m", Text: "The  kiln\tis hot", Score: 1}
	o := FitOptions{Query: "kiln", Budget: 200}
	if got, want := Section(Fit([]Hit{a}, o)), Section(Fit([]Hit{plain}, o)); got != want {
		t.Errorf("shared analysis fits %q, a fresh one %q", got, want)
	}
}

func TestFold(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", ""}, {"a b", "a b"}, {" a", "a"}, {"a ", "a"}, {"a  b", "a b"}, {"a\tb\nc", "a b c"},
		{"naïve  café", "naïve café"}, {"a\u2028b", "a b"}, {"café", "café"},
	} {
		if got := fold(c.in); got != c.want {
			t.Errorf("fold(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// Concurrent searches and Fits share the cached hits' analyses while a writer keeps
// replacing the same memories: no race (run with -race), and once the writer is done
// every search shows the last texts.
func TestHitCacheConcurrentReplace(t *testing.T) {
	ix := open(t, Options{})
	ctx := context.Background()
	const n = 40
	put := func(v int) {
		for i := range n {
			text := fmt.Sprintf("kiln firing v%d memory %d %s", v, i, strings.Repeat("glaze ", 200+v%7))
			if err := ix.Add(Doc{ID: fmt.Sprintf("m-%d", i), Agent: "a", Kind: KindNote, Text: text}); err != nil {
				t.Error(err)
			}
		}
	}
	put(0)
	if err := ix.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	stop := untilStopped(6, func() {
		hits, err := ix.Search(ctx, Query{Agent: "a", Text: "kiln firing glaze", K: 30})
		if err != nil {
			t.Error(err)
			return
		}
		for _, h := range hits {
			if h.Agent != "a" {
				t.Errorf("hit of agent %q", h.Agent)
			}
		}
		Section(Prepare(hits, "kiln glaze").Fit(FitOptions{Budget: 2000}))
	})
	for v := 1; v <= 30; v++ {
		put(v)
		if err := ix.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	stop()
	for range 3 {
		hits, err := ix.Search(ctx, Query{Agent: "a", Text: "kiln firing glaze", K: 50})
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range hits {
			if !strings.Contains(h.Text, "v30 ") {
				t.Errorf("%s: stale text %q", h.ID, h.Text[:30])
			}
		}
		for _, s := range Prepare(hits, "kiln").Fit(FitOptions{Budget: 4000}) {
			if !strings.Contains(s.Text, "v30") && !s.Trimmed {
				t.Errorf("%s shown stale: %q", s.ID, s.Text[:30])
			}
		}
	}
}

// The memories a search loads from the index carry the analysis the cache keeps, so the
// first prompt's Fit makes it once for every later one.
func TestLoadedHitsShareTheCachesAnalysis(t *testing.T) {
	ix := open(t, Options{})
	load(t, ix, doc("m-1", "a", KindNote, "the kiln is hot"))
	hits := find(t, ix, Query{Agent: "a", Text: "kiln"})
	cached, ok := ix.live().hits.get("m-1")
	if len(hits) != 1 || !ok || hits[0].an == nil || hits[0].an != cached.an {
		t.Fatalf("loaded hit's analysis %p, the cache's %p (cached %v)", hits[0].an, cached.an, ok)
	}
	Prepare(hits, "kiln")
	if cached.an.text != "the kiln is hot" {
		t.Errorf("the cache's analysis was not made by the first Fit: %q", cached.an.text)
	}
}
