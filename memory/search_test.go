package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/index/scorch"
)

func TestMappingFieldRoundTrip(t *testing.T) {
	ix := open(t, Options{MaxTextBytes: 64})
	cases := []struct {
		name string
		in   Doc
		want Doc // as the index returns it
	}{
		{"agent_memory",
			Doc{ID: "ep-1", Agent: "alice", Kind: KindEpisode, Text: "ran go test in the repo", Source: "shell", Created: t0.Add(123456789)},
			Doc{ID: "ep-1", Agent: "alice", Kind: KindEpisode, Text: "ran go test in the repo", Source: "shell", Created: t0.Add(123456789)}},
		{"shared_memory_without_source",
			Doc{ID: "note-1", Kind: KindNote, Text: "the staging server is staging.example", Created: t0},
			Doc{ID: "note-1", Kind: KindNote, Text: "the staging server is staging.example", Created: t0}},
		{"non_utf8_and_nul_sanitized",
			Doc{ID: "chat-1", Agent: "bob", Kind: KindChat, Text: "bad \xff byte\x00here", Source: "slack:C1/123", Created: t0.In(time.FixedZone("X", 3600))},
			Doc{ID: "chat-1", Agent: "bob", Kind: KindChat, Text: "bad \uFFFD byte here", Source: "slack:C1/123", Created: t0}},
		{"huge_text_cut_on_rune_boundary",
			Doc{ID: "file-1", Agent: "bob", Kind: KindFile, Text: strings.Repeat("é", 40), Created: t0},
			Doc{ID: "file-1", Agent: "bob", Kind: KindFile, Text: strings.Repeat("é", 32), Created: t0}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			load(t, ix, c.in)
			hits, err := ix.load(context.Background(), ix.live(), []string{c.in.ID})
			if err != nil {
				t.Fatal(err)
			}
			h := hits[c.in.ID]
			got := Doc{ID: h.ID, Agent: h.Agent, Kind: h.Kind, Text: h.Text, Source: h.Source, Created: h.Created}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("round trip:\n got %+v\nwant %+v", got, c.want)
			}
		})
	}
}

func TestMappingIsExplicitAndBM25(t *testing.T) {
	m := newMapping()
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(m)
	var got struct {
		ScoringModel string `json:"scoring_model"`
		IndexDynamic bool   `json:"index_dynamic"`
		StoreDynamic bool   `json:"store_dynamic"`
		Default      struct {
			Dynamic    bool `json:"dynamic"`
			Properties map[string]struct {
				Fields []struct {
					Type, Analyzer     string
					Store, Index       bool
					IncludeTermVectors bool `json:"include_term_vectors"`
					IncludeInAll       bool `json:"include_in_all"`
					DocValues          bool `json:"docvalues"`
				}
			}
		} `json:"default_mapping"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got.ScoringModel != "bm25" || got.IndexDynamic || got.StoreDynamic || got.Default.Dynamic {
		t.Fatalf("mapping: %s", b)
	}
	want := map[string][2]string{
		fieldText: {"text", "en"}, fieldAgent: {"text", "keyword"}, fieldKind: {"text", "keyword"},
		fieldSource: {"text", "keyword"}, fieldCreated: {"datetime", ""},
		fieldSpeaker: {"text", "en"}, fieldContext: {"text", "en"}, fieldDates: {"text", datesAnalyzer},
	}
	for name, w := range want {
		fs := got.Default.Properties[name].Fields
		if len(fs) != 1 || fs[0].Type != w[0] || fs[0].Analyzer != w[1] || fs[0].Store != (name != fieldContext && name != fieldDates) || fs[0].Index != (name != fieldCreated) ||
			fs[0].IncludeTermVectors || fs[0].IncludeInAll || fs[0].DocValues {
			t.Errorf("field %s: %+v", name, fs)
		}
	}
}

// toDocument must index exactly what the mapping would: same hits, same scores.
func TestAdvancedDocumentsMatchMapping(t *testing.T) {
	docs := append(rankingCorpus(),
		Doc{ID: "c1", Agent: "alice", Kind: KindChat, Text: "A beagle, we adopted him yesterday.", Speaker: "Ana",
			Context: "What breed is the new dog?", Created: t0},
		Doc{ID: "c2", Agent: "alice", Kind: KindChat, Text: "Is the deploy done?", Speaker: "Ben", Created: t0})
	dir := t.TempDir()
	viaMapping, err := bleve.NewUsing(filepath.Join(dir, "m"), newMapping(), scorch.Name, scorch.Name, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer viaMapping.Close()
	b := viaMapping.NewBatch()
	for _, d := range docs {
		d, _ = clean(d, 1<<20)
		if err := b.Index(d.ID, mappingValue(d)); err != nil {
			t.Fatal(err)
		}
	}
	if err := viaMapping.Batch(b); err != nil {
		t.Fatal(err)
	}
	ix := open(t, Options{})
	load(t, ix, docs...)
	live := ix.live()
	mg := &generation{idx: viaMapping, an: live.an}
	mg.tokens.Store(live.tokens.Load())
	mg.analyzed.Store(live.analyzed.Load())
	mg.ctxTokens.Store(live.ctxTokens.Load())
	mg.ctxAnalyzed.Store(live.ctxAnalyzed.Load())
	for _, q := range []Query{
		{AllAgents: true, Text: "deploy release"},
		{Agent: "alice", Text: "deploy failed database"},
		{Agent: "bob", Text: "weather", Kinds: []Kind{KindNote}},
		{Agent: "alice", Text: "When did Ana get the dog, which breed?"},
		{Agent: "alice", Text: "what did ben ask about the deploy"},
	} {
		want, err := ix.lexical(context.Background(), mg, q, 20)
		if err != nil {
			t.Fatal(err)
		}
		sortHits(want)
		got := find(t, ix, Query{Agent: q.Agent, AllAgents: q.AllAgents, Text: q.Text, Kinds: q.Kinds, K: 20})
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%+v:\n got %+v\nwant %+v", q, got, want)
		}
	}
}

// rankingCorpus is a small corpus with known answers.
func rankingCorpus() []Doc {
	return []Doc{
		doc("a1", "alice", KindEpisode, "deploy failed: the release script could not reach the database"),
		doc("a2", "alice", KindEpisode, "deploy deploy deploy: release 1.2 shipped, release notes written, deploy done"),
		doc("a3", "alice", KindNote, "the database password lives in the vault"),
		doc("a4", "alice", KindResult, "go test ./... passed"),
		doc("b1", "bob", KindEpisode, "deploy of the weather service went fine"),
		doc("b2", "bob", KindNote, "weather forecast api key rotated"),
		doc("b3", "bob", KindFeedback, "stop deploying on fridays"),
		doc("s1", "", KindNote, "shared: release checklist before every deploy"),
		doc("s2", "", KindFile, "runbook: database failover steps"),
	}
}

// bm25Corpus is built so each case differs in one thing; every text has six terms after
// analysis unless the case is about length.
func bm25Corpus() []Doc {
	d := func(id, text string) Doc { return doc(id, "a", KindEpisode, text) }
	return []Doc{
		d("match3", "deploy release database alpha bravo charlie"),
		d("match2", "deploy release delta echo foxtrot golf"),
		d("match1", "deploy hotel india juliet kilo lima"),
		d("match0", "mike november oscar papa quebec romeo"),
		d("rare", "zeppelin sierra tango uniform victor whiskey"),
		d("tf2", "backup backup mike november oscar papa"),
		d("tf1", "backup sierra tango uniform victor whiskey"),
		d("short", "vault xray"),
		d("long", "vault yankee zulu amber basil cedar dune ember fjord grove"),
	}
}

func TestBM25Ranking(t *testing.T) {
	ix := open(t, Options{})
	load(t, ix, bm25Corpus()...)
	cases := []struct {
		name string
		text string
		want []string
	}{
		{"more_query_terms_matched_rank_higher", "deploy release database", []string{"match3", "match2", "match1"}},
		{"rare_term_beats_common_term", "deploy zeppelin", []string{"rare", "match1", "match2", "match3"}},
		{"term_frequency_counts", "backup", []string{"tf2", "tf1"}},
		{"shorter_memory_ranks_higher", "vault", []string{"short", "long"}},
		{"stemming_matches_inflections", "deployed databases", []string{"match3", "match1", "match2"}}, // tie: by id
		{"stop_words_only_finds_nothing", "the of and", nil},
		{"unknown_term_finds_nothing", "kubernetes", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			hits := find(t, ix, Query{Agent: "a", Text: c.text})
			if got := ids(hits); !slices.Equal(got, c.want) && len(got)+len(c.want) > 0 {
				t.Errorf("got %v, want %v", got, c.want)
			}
			for i := 1; i < len(hits); i++ {
				if hits[i].Score > hits[i-1].Score {
					t.Errorf("%s (%v) not below %s (%v)", hits[i].ID, hits[i].Score, hits[i-1].ID, hits[i-1].Score)
				}
			}
		})
	}
}

func TestAgentFilterIsolatesAndKeepsScores(t *testing.T) {
	ix := open(t, Options{})
	load(t, ix, rankingCorpus()...)
	cases := []struct {
		name  string
		q     Query
		agent []string // agents whose memories may appear
		want  []string
	}{
		{"alice_sees_own_and_shared", Query{Agent: "alice", Text: "deploy release database"}, []string{"alice", ""}, []string{"a1", "a2", "a3", "s1", "s2"}},
		{"bob_sees_own_and_shared", Query{Agent: "bob", Text: "deploy release database"}, []string{"bob", ""}, []string{"b1", "b3", "s1", "s2"}},
		{"single_term_query", Query{Agent: "bob", Text: "weather"}, []string{"bob", ""}, []string{"b1", "b2"}},
		{"unknown_agent_sees_shared_only", Query{Agent: "carol", Text: "deploy database"}, []string{""}, []string{"s1", "s2"}},
		{"no_agent_means_shared_only", Query{Text: "deploy database"}, []string{""}, []string{"s1", "s2"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.q.K = 100
			hits := find(t, ix, c.q)
			got := ids(hits)
			slices.Sort(got)
			if !slices.Equal(got, c.want) {
				t.Errorf("got %v, want %v", got, c.want)
			}
			unfiltered := map[string]float64{}
			for _, h := range find(t, ix, Query{AllAgents: true, Text: c.q.Text, K: 100}) {
				unfiltered[h.ID] = h.Score
			}
			for _, h := range hits {
				if !slices.Contains(c.agent, h.Agent) {
					t.Errorf("hit %s of agent %q leaked", h.ID, h.Agent)
				}
				if h.Score != unfiltered[h.ID] { // exact: the filter must not touch the score
					t.Errorf("%s: filtered score %v, unfiltered %v", h.ID, h.Score, unfiltered[h.ID])
				}
			}
		})
	}
}

func TestSharedMemoriesVisibleToAllAgents(t *testing.T) {
	ix := open(t, Options{})
	load(t, ix, rankingCorpus()...)
	for _, agent := range []string{"alice", "bob", "carol", ""} {
		t.Run("agent_"+agent, func(t *testing.T) {
			got := ids(find(t, ix, Query{Agent: agent, Text: "runbook failover checklist"}))
			slices.Sort(got)
			if !slices.Equal(got, []string{"s1", "s2"}) {
				t.Errorf("got %v", got)
			}
		})
	}
}

func TestKindsFilter(t *testing.T) {
	ix := open(t, Options{})
	load(t, ix, rankingCorpus()...)
	cases := []struct {
		name  string
		q     Query
		want  []string
		score bool // compare with the unfiltered score
	}{
		{"notes_only", Query{Agent: "alice", Text: "database deploy release", Kinds: []Kind{KindNote}}, []string{"a3", "s1"}, true},
		{"two_kinds", Query{Agent: "alice", Text: "database deploy", Kinds: []Kind{KindNote, KindFile}}, []string{"a3", "s1", "s2"}, true},
		{"kinds_across_agents", Query{AllAgents: true, Text: "deploy deploying", Kinds: []Kind{KindFeedback}}, []string{"b3"}, true},
		{"kind_with_no_memories", Query{Agent: "alice", Text: "deploy", Kinds: []Kind{KindChat}}, nil, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			hits := find(t, ix, c.q)
			got := ids(hits)
			slices.Sort(got)
			if !slices.Equal(got, c.want) && !(len(got) == 0 && len(c.want) == 0) {
				t.Fatalf("got %v, want %v", got, c.want)
			}
			unfiltered := map[string]float64{}
			for _, h := range find(t, ix, Query{AllAgents: true, Text: c.q.Text, K: 100}) {
				unfiltered[h.ID] = h.Score
			}
			for _, h := range hits {
				if !slices.Contains(c.q.Kinds, h.Kind) {
					t.Errorf("%s has kind %s", h.ID, h.Kind)
				}
				if h.Score != unfiltered[h.ID] {
					t.Errorf("%s: score %v, unfiltered %v", h.ID, h.Score, unfiltered[h.ID])
				}
			}
		})
	}
}

func TestRecencyDecayOnlyBreaksTies(t *testing.T) {
	now := t0.Add(30 * 24 * time.Hour)
	ix := open(t, Options{Now: func() time.Time { return now }})
	old := Doc{ID: "old", Agent: "a", Kind: KindEpisode, Text: "backup backup backup disk", Created: now.Add(-10 * 24 * time.Hour)}
	fresh := Doc{ID: "fresh", Agent: "a", Kind: KindEpisode, Text: "backup photo album trip", Created: now.Add(-time.Hour)}
	// Two memories that match alike: only recency can order them.
	tieOld := Doc{ID: "tie-old", Agent: "a", Kind: KindEpisode, Text: "restore zebra", Created: now.Add(-10 * 24 * time.Hour)}
	tieNew := Doc{ID: "tie-new", Agent: "a", Kind: KindEpisode, Text: "restore zebra", Created: now.Add(-time.Hour)}
	load(t, ix, old, fresh, tieOld, tieNew)
	cases := []struct {
		name     string
		text     string
		halfLife time.Duration
		want     []string
	}{
		{"no_decay_bm25_order", "backup", 0, []string{"old", "fresh"}},
		{"one_day_half_life_does_not_bury_the_better_match", "backup", 24 * time.Hour, []string{"old", "fresh"}},
		{"half_life_720h_does_not_bury_the_better_match", "backup", 720 * time.Hour, []string{"old", "fresh"}},
		{"very_long_half_life_keeps_bm25_order", "backup", 1000 * 24 * time.Hour, []string{"old", "fresh"}},
		{"one_day_half_life_breaks_a_tie_for_the_recent", "zebra", 24 * time.Hour, []string{"tie-new", "tie-old"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			hits := find(t, ix, Query{Agent: "a", Text: c.text, HalfLife: c.halfLife})
			if got := ids(hits); !slices.Equal(got, c.want) {
				t.Fatalf("got %v, want %v", got, c.want)
			}
			if c.halfLife > 0 {
				for _, h := range hits {
					want := h.BM25 * (1 + recencyTieWeight*math.Exp2(-now.Sub(h.Created).Hours()/c.halfLife.Hours()))
					if math.Abs(h.Score-want) > 1e-9*want {
						t.Errorf("%s: score %v, want %v", h.ID, h.Score, want)
					}
				}
			}
		})
	}
}

func TestLongQueryKeepsRarestTerms(t *testing.T) {
	ix := open(t, Options{})
	var docs []Doc
	for i := range 50 {
		docs = append(docs, doc("c"+string(rune('a'+i%26))+string(rune('a'+i/26)), "a", KindEpisode, "common words everywhere filler"))
	}
	docs = append(docs, doc("needle", "a", KindNote, "zanzibar"))
	load(t, ix, docs...)
	var words []string
	for i := range 40 {
		words = append(words, "filler", "common", "everywhere", "words", "unseen"+string(rune('a'+i%26))+string(rune('a'+i/26)))
	}
	words = append(words, "zanzibar")
	hits := find(t, ix, Query{Agent: "a", Text: strings.Join(words, " "), K: 1})
	if len(hits) != 1 || hits[0].ID != "needle" {
		t.Fatalf("got %v", ids(hits))
	}
}

// A term in most memories is dropped from a search of every agent's memories (it would score
// next to nothing), unless it is all the query has. An agent's search that finds fewer than
// wanted runs again with every term (no starvation).
func TestTermInMostMemoriesDropped(t *testing.T) {
	defer func(n uint64) { commonTermMinDocs = n }(commonTermMinDocs)
	commonTermMinDocs = 0
	ix := open(t, Options{})
	var docs []Doc
	for i := range 9 {
		docs = append(docs, doc(fmt.Sprint("s", i), "a", KindEpisode, fmt.Sprintf("status report %d", i)))
	}
	docs = append(docs, doc("z", "a", KindNote, "zephyr"), doc("zs", "a", KindNote, "zephyr status"))
	load(t, ix, docs...)
	hits := find(t, ix, Query{AllAgents: true, Text: "status zephyr"})
	alone := find(t, ix, Query{AllAgents: true, Text: "zephyr"})
	if got := ids(hits); len(got) != 2 || len(alone) != 2 || hits[0].Score != alone[0].Score || hits[1].Score != alone[1].Score {
		t.Errorf("status zephyr = %+v\nwant the scores of zephyr alone %+v (status is in 10 of 11: dropped)", hits, alone)
	}
	if got := find(t, ix, Query{AllAgents: true, Text: "status"}); len(got) != 10 {
		t.Errorf("status alone: %d hits, want all 10", len(got))
	}
	if got := find(t, ix, Query{Agent: "a", Text: "status zephyr"}); len(got) != 10 || got[0].ID != "zs" {
		t.Errorf("agent a's status zephyr = %v, want all 10 memories with either term, zs first", ids(got))
	}
}

func TestCommonTermsOnlyAddToScores(t *testing.T) {
	defer func(f, d float64, n uint64) {
		commonTermFraction, dropTermFraction, commonTermMinDocs = f, d, n
	}(commonTermFraction, dropTermFraction, commonTermMinDocs)
	commonTermFraction, dropTermFraction, commonTermMinDocs = 0.3, 1, 0
	ix := open(t, Options{})
	docs := []Doc{
		doc("r1", "a", KindNote, "build zeppelin tango"),
		doc("r2", "a", KindNote, "zeppelin quiet tango"),
		doc("bob", "bob", KindNote, "build zeppelin tango"),
	}
	for i := range 7 {
		docs = append(docs, doc(fmt.Sprint("c", i), "a", KindEpisode, fmt.Sprintf("build step %d done", i)))
	}
	load(t, ix, docs...)
	cases := []struct {
		name string
		q    Query
		want []string
	}{
		{"agent_search_every_term_finds", Query{Agent: "a", Text: "build zeppelin"}, []string{"r1", "r2", "c0", "c1", "c2", "c3", "c4", "c5", "c6"}},
		{"all_agents_same_ranking", Query{AllAgents: true, Text: "build zeppelin"}, []string{"bob", "r1", "r2"}},
		{"common_only_query_keeps_its_rarest_term", Query{Agent: "a", Text: "build"}, []string{"r1", "c0", "c1", "c2", "c3", "c4", "c5", "c6"}},
		{"all_agents_common_only_query_needs_its_two_rarest_terms_together", Query{AllAgents: true, Text: "build done"}, []string{"c0", "c1", "c2", "c3", "c4", "c5", "c6"}},
		{"agent_common_only_query_finds_by_any_term", Query{Agent: "a", Text: "build done"}, []string{"c0", "c1", "c2", "c3", "c4", "c5", "c6", "r1"}},
	}
	all := map[string]float64{}
	for _, h := range find(t, ix, Query{AllAgents: true, Text: "build zeppelin"}) {
		all[h.ID] = h.Score
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			hits := find(t, ix, c.q)
			if got := ids(hits); !slices.Equal(got, c.want) {
				t.Fatalf("got %v, want %v", got, c.want)
			}
			if c.q.Text == "build zeppelin" {
				if hits[0].Score <= hits[len(hits)-1].Score {
					t.Errorf("the common term added nothing: %+v", hits)
				}
				for _, h := range hits {
					// The exhaustive form (a short agent search) also weighs how many terms matched
					// (Bleve's coordination): only a memory with every term scores alike.
					if s, ok := all[h.ID]; ok && (c.q.AllAgents || h.ID == "r1") && math.Abs(h.Score-s) > 1e-9*s {
						t.Errorf("%s: score %v, unfiltered %v", h.ID, h.Score, all[h.ID])
					}
				}
			}
		})
	}
}

// mappingValue is d as the mapping would index it through bleve.Index.Index (to check
// toDocument against the mapping).
func mappingValue(d Doc) map[string]any {
	v := map[string]any{
		fieldText:    d.Text,
		fieldAgent:   agentTerm(d.Agent),
		fieldKind:    string(d.Kind),
		fieldCreated: d.Created.Format(time.RFC3339Nano),
	}
	if d.Source != "" {
		v[fieldSource] = d.Source
	}
	if d.Speaker != "" {
		v[fieldSpeaker] = d.Speaker
	}
	if d.Context != "" {
		v[fieldContext] = d.Context
	}
	if dates := dateTerms(d.Text, d.Created); dates != "" {
		v[fieldDates] = dates
	}
	return v
}
