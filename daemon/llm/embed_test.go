package llm_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentd/agentd/daemon/llm"
	"github.com/agentd/agentd/internal/ollamatest"
	"github.com/agentd/agentd/memory"
)

func TestEmbed(t *testing.T) {
	fake := ollamatest.NewFake(t)
	fake.SetModels(ollamatest.TinyModelName, "embedder")
	c, err := llm.New(fake.URL(), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	e := llm.Embedder{Client: c, Model: "embedder"}
	vecs, err := e.Embed(ctx, []string{"the launch code", "a garden"})
	if err != nil || len(vecs) != 2 || len(vecs[0]) != ollamatest.EmbedDims {
		t.Fatalf("Embed = %d vectors, %v", len(vecs), err)
	}
	if want := ollamatest.FakeEmbedding("a garden"); vecs[1][0] != want[0] || vecs[1][5] != want[5] {
		t.Errorf("vectors out of order")
	}
	_, err = c.Embed(ctx, "missing", []string{"x"})
	var nf *llm.ModelNotFoundError
	if !errors.As(err, &nf) {
		t.Errorf("embedding with a missing model: %v, want *ModelNotFoundError", err)
	}
	fake.SetDown(true)
	if _, err := e.Embed(ctx, []string{"x"}); !errors.Is(err, llm.ErrUnavailable) {
		t.Errorf("embedding with the server down: %v, want ErrUnavailable", err)
	}
}

// The hybrid path as the daemon wires it with embed_model set: llm.Embedder over Ollama's
// /api/embed (the fake, which embeds a bag of words). Fusion must take part when the model
// answers, and the search must go on with BM25 alone when it does not.
func TestEmbedderFeedsMemoryHybridSearch(t *testing.T) {
	fake := ollamatest.NewFake(t)
	fake.SetModels("embedder")
	c, err := llm.New(fake.URL(), nil)
	if err != nil {
		t.Fatal(err)
	}
	ix := openMemory(t, memory.Options{Embedder: llm.Embedder{Client: c, Model: "embedder"}, QueryEmbedTimeout: 5 * time.Second})
	loadMemories(t, ix,
		chatMemory("answer", "Ana", "A beagle. He loves the beach.", "What breed is Biscuit?", said),
		chatMemory("other", "Ben", "The pottery class was fun.", "", said),
		chatMemory("third", "Ben", "Biscuit ran along the beach all day.", "", said))
	if s := ix.Stats(); s.Vectors != 3 || s.EmbedFailures != 0 {
		t.Fatalf("stats %+v, want 3 vectors and no failures", s)
	}
	hits := searchMemory(t, ix, memory.Query{Agent: "a", Text: "What breed is Biscuit, the beagle at the beach?", K: 3})
	if len(hits) == 0 || hits[0].ID != "answer" {
		t.Fatalf("got %v, want answer first", hitIDs(hits))
	}
	for _, h := range hits {
		if h.Similarity == 0 || h.Score >= 1 { // fused scores are sums of 1/(60+rank)
			t.Errorf("hit %s: similarity %v score %v, want a fused hit", h.ID, h.Similarity, h.Score)
		}
	}
	fake.SetDown(true)
	hits = searchMemory(t, ix, memory.Query{Agent: "a", Text: "What breed is Biscuit, the beagle at the beach?", K: 3})
	if len(hits) == 0 || hits[0].ID != "answer" || hits[0].Similarity != 0 || hits[0].BM25 != hits[0].Score {
		t.Fatalf("with the model down got %+v, want BM25 alone with answer first", hits)
	}
}

// said is when the chat memories below were said.
var said = time.Date(2023, 5, 8, 13, 56, 0, 0, time.UTC)

// chatMemory is a chat memory of agent "a": who said text, after what.
func chatMemory(id, speaker, text, context string, at time.Time) memory.Doc {
	return memory.Doc{ID: id, Agent: "a", Kind: memory.KindChat, Text: text, Speaker: speaker, Context: context, Created: at}
}

func openMemory(t *testing.T, opts memory.Options) *memory.Index {
	t.Helper()
	opts.BatchDelay = time.Millisecond
	ix, err := memory.Open(t.TempDir(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	return ix
}

// loadMemories adds docs and waits until they are searchable.
func loadMemories(t *testing.T, ix *memory.Index, docs ...memory.Doc) {
	t.Helper()
	if err := ix.Add(docs...); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := ix.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}

func searchMemory(t *testing.T, ix *memory.Index, q memory.Query) []memory.Hit {
	t.Helper()
	hits, err := ix.Search(context.Background(), q)
	if err != nil {
		t.Fatalf("search %+v: %v", q, err)
	}
	return hits
}

func hitIDs(hits []memory.Hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.ID
	}
	return out
}
