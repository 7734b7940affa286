package memory

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/testutil"
)

func hybridCorpus() []Doc {
	return []Doc{
		doc("both", "a", KindNote, "dog dog hound"),               // lexical and semantic match
		doc("lex", "a", KindNote, "dog weather rain forecast"),    // lexical, semantically mostly weather
		doc("vec", "a", KindNote, "puppy hound"),                  // semantic only
		doc("other", "a", KindNote, "database crash"),             // neither
		doc("bobs", "bob", KindNote, "puppy puppy"),               // another agent's
		doc("chat", "a", KindChat, "hound puppy dog dog dog dog"), // filtered out by kind below
	}
}

func TestRRFFusion(t *testing.T) {
	emb := &conceptEmbedder{}
	ix := open(t, Options{Embedder: emb})
	load(t, ix, hybridCorpus()...)
	q := Query{Agent: "a", Text: "dog", Kinds: []Kind{KindNote}}
	hits := find(t, ix, q)
	if got, want := ids(hits), []string{"both", "lex", "vec", "other"}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	// Recompute the fusion from the two rankings the hits report.
	bm := slices.Clone(hits)
	bm = slices.DeleteFunc(bm, func(h Hit) bool { return h.BM25 == 0 })
	sort.SliceStable(bm, func(i, j int) bool { return bm[i].BM25 > bm[j].BM25 })
	vec := slices.Clone(hits)
	sort.SliceStable(vec, func(i, j int) bool { return vec[i].Similarity > vec[j].Similarity })
	want := map[string]float64{}
	for r, h := range bm {
		want[h.ID] += 1 / float64(60+r+1)
	}
	for r, h := range vec {
		want[h.ID] += 1 / float64(60+r+1)
	}
	for _, h := range hits {
		if math.Abs(h.Score-want[h.ID]) > 1e-12 {
			t.Errorf("%s: score %v, want %v", h.ID, h.Score, want[h.ID])
		}
		if h.Similarity <= 0 || h.Agent != "a" || h.Kind != KindNote || h.Text == "" {
			t.Errorf("hit %+v", h)
		}
	}
}

func TestEmbedderFailureFallsBackToBM25(t *testing.T) {
	cases := []struct {
		name    string
		breakIt func(*conceptEmbedder)
		log     string
	}{
		{"model_error", func(e *conceptEmbedder) { e.setFail(errModelDown) }, errModelDown.Error()},
		{"model_too_slow", func(e *conceptEmbedder) {
			e.mu.Lock()
			e.block = make(chan struct{}) // never closed; Close cancels the call
			e.mu.Unlock()
		}, "deadline exceeded"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			emb := &conceptEmbedder{}
			logs := &testutil.SyncBuffer{}
			ix := open(t, Options{Embedder: emb, Logger: debugLogger(logs), QueryEmbedTimeout: 50 * time.Millisecond, EmbedTimeout: 50 * time.Millisecond})
			load(t, ix, hybridCorpus()...)
			c.breakIt(emb)
			load(t, ix, doc("late", "a", KindNote, "dog late"))

			hits := find(t, ix, Query{Agent: "a", Text: "dog", Kinds: []Kind{KindNote}})
			if got, want := ids(hits), []string{"both", "late", "lex"}; !slices.Equal(got, want) {
				t.Fatalf("got %v, want %v", got, want)
			}
			for _, h := range hits {
				if h.Score != h.BM25 || h.Similarity != 0 {
					t.Errorf("%s: score %v, bm25 %v, similarity %v", h.ID, h.Score, h.BM25, h.Similarity)
				}
			}
			if !strings.Contains(logs.String(), "embedding failed") || !strings.Contains(logs.String(), c.log) {
				t.Errorf("no warning logged:\n%s", logs)
			}
			st := ix.Stats()
			if st.EmbedFailures < 2 || st.Vectors != len(hybridCorpus()) || st.Docs != uint64(len(hybridCorpus())+1) {
				t.Errorf("stats %+v", st)
			}
		})
	}
}

func TestHybridRespectsAgentFilter(t *testing.T) {
	ix := open(t, Options{Embedder: &conceptEmbedder{}})
	load(t, ix, hybridCorpus()...)
	load(t, ix, doc("shared", "", KindNote, "hound"))
	for _, agent := range []string{"a", "carol"} {
		for _, h := range find(t, ix, Query{Agent: agent, Text: "puppy", K: 50}) {
			if h.Agent != agent && h.Agent != "" {
				t.Errorf("agent %s got %s's memory %s", agent, h.Agent, h.ID)
			}
		}
	}
	got := ids(find(t, ix, Query{Agent: "carol", Text: "puppy"}))
	if !slices.Equal(got, []string{"shared"}) {
		t.Errorf("carol: %v", got)
	}
}

func TestRebuildReusesVectors(t *testing.T) {
	emb := &conceptEmbedder{}
	ix := open(t, Options{Embedder: emb})
	docs := hybridCorpus()
	load(t, ix, docs...)
	before := emb.embedded.Load()
	docs[0].Text = "release shipped" // changed: embedded again
	if err := ix.Rebuild(context.Background(), sliceSource(docs)); err != nil {
		t.Fatal(err)
	}
	if n := emb.embedded.Load() - before; n != 1 {
		t.Fatalf("rebuild embedded %d texts, want 1", n)
	}
	if st := ix.Stats(); st.Vectors != len(docs) {
		t.Fatalf("stats %+v", st)
	}
	if hits := find(t, ix, Query{Agent: "a", Text: "deploy", K: 1}); len(hits) != 1 || hits[0].ID != "both" {
		t.Fatalf("vector of the changed text not used: %v", ids(hits))
	}
}

func TestVectorFileTornTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), vectorsFile)
	s, err := openVectorStore(path)
	if err != nil {
		t.Fatal(err)
	}
	recs := []vecRecord{
		{id: "a", agent: "x", kind: KindNote, hash: 1, vec: []float32{1, 0}},
		{id: "b", agent: "", kind: KindChat, hash: 2, vec: []float32{0, 1}},
		{id: "a"}, // delete
		{id: "c", agent: "x", kind: KindNote, hash: 3, vec: []float32{0.6, 0.8}},
	}
	if err := s.write(recs); err != nil {
		t.Fatal(err)
	}
	s.close()
	fi, _ := os.Stat(path)
	os.Truncate(path, fi.Size()-3) // a crash mid-append

	s, err = openVectorStore(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	if s.count() != 1 || !s.has("b") || s.has("a") || s.has("c") {
		t.Fatalf("entries after torn tail: %v", s.entries)
	}
	if err := s.write([]vecRecord{{id: "d", agent: "x", kind: KindNote, hash: 4, vec: []float32{1, 0}}}); err != nil {
		t.Fatal(err)
	}
	hits, err := s.search(context.Background(), []float32{1, 0}, []string{"x", ""}, nil, 10)
	if err != nil || len(hits) != 2 || hits[0].id != "d" || hits[0].sim != 1 {
		t.Fatalf("search after repair: %+v, %v", hits, err)
	}
	if v := s.lookup("b", 2); !slices.Equal(v, []float32{0, 1}) {
		t.Fatalf("lookup: %v", v)
	}
	if v := s.lookup("b", 99); v != nil {
		t.Fatal("lookup ignored the text hash")
	}
}

func TestTopHitsKeepsBest(t *testing.T) {
	cases := []struct {
		name string
		n    int
		sims []float64
	}{
		{"fewer_than_n", 5, []float64{0.1, 0.9, 0.5}},
		{"more_than_n", 3, []float64{0.2, 0.9, 0.1, 0.8, 0.3, 0.95, 0.5}},
		{"ties_broken_by_id", 2, []float64{0.5, 0.5, 0.5, 0.5}},
		{"n_zero", 0, []float64{0.3}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			top := &topHits{n: c.n}
			var all []vecHit
			for i, s := range c.sims {
				h := vecHit{id: string(rune('a' + i)), sim: s}
				top.push(h)
				all = append(all, h)
			}
			sort.Slice(all, func(i, j int) bool { return worse(all[j], all[i]) })
			want := all[:min(c.n, len(all))]
			if got := top.sorted(); !slices.Equal(got, want) {
				t.Errorf("got %v, want %v", got, want)
			}
		})
	}
}
