package llm_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/daemon/llm"
	"github.com/agentd/agentd/internal/ollamatest"
	"github.com/agentd/agentd/memory"
)

// TestLoadForCapsAndProbes checks the choice: the probed context length, capped by
// max_context; keep_alive from the config.
func TestLoadForCapsAndProbes(t *testing.T) {
	keep := 3 * time.Minute
	for _, tc := range []struct {
		name       string
		probed     int
		maxContext int
		want       int
	}{
		{"max_context_caps_the_model", 8192, 1024, 1024},
		{"model_caps_max_context", 2048, 8192, 2048},
		{"no_max_context", 4096, 0, 4096},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := ollamatest.NewFake(t)
			fake.SetContextLength(tc.probed)
			c, err := llm.New(fake.URL(), nil)
			if err != nil {
				t.Fatal(err)
			}
			c.SetLimits(llm.Limits{MaxContext: tc.maxContext, KeepAlive: &keep})
			ld, err := c.LoadFor(context.Background(), ollamatest.TinyModelName)
			if err != nil {
				t.Fatal(err)
			}
			if ld.NumCtx != tc.want || ld.KeepAlive == nil || *ld.KeepAlive != keep {
				t.Errorf("LoadFor = %+v, want num_ctx %d keep_alive %v", ld, tc.want, keep)
			}
		})
	}
}

// TestChatSendsTheModelsLoad checks that once limits are set, every chat and embed
// request carries the model's one Load whatever the caller asked, so the fake never
// reloads, and that max_context caps them all.
func TestChatSendsTheModelsLoad(t *testing.T) {
	fake := ollamatest.NewFake(t)
	c, err := llm.New(fake.URL(), nil)
	if err != nil {
		t.Fatal(err)
	}
	keep := time.Minute
	c.SetLimits(llm.Limits{MaxContext: 1024, KeepAlive: &keep})
	ctx := context.Background()
	zero := time.Duration(0)
	for _, req := range []llm.ChatRequest{
		{NumCtx: 2048, NumPredict: 512},
		{NumCtx: 8192, NumPredict: 64},
		{NumCtx: 4096, KeepAlive: &zero},
		{},
	} {
		req.Model = ollamatest.TinyModelName
		req.Messages = []llm.Message{{Role: "user", Content: "hi"}}
		if _, err := c.Chat(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Embed(ctx, ollamatest.TinyModelName, []string{"a"}); err != nil {
		t.Fatal(err)
	}
	if r := fake.Reloads(); len(r) != 0 {
		t.Errorf("reloads: %v", r)
	}
	loads := fake.Loads(ollamatest.TinyModelName)
	if len(loads) != 5 {
		t.Fatalf("loads = %d, want 5", len(loads))
	}
	for i, ld := range loads {
		if ld.Runner.NumCtx != 1024 || ld.KeepAlive == nil || *ld.KeepAlive != keep {
			t.Errorf("request %d: %+v, want num_ctx 1024 keep_alive 1m", i, ld)
		}
	}
}

// TestPoolEmbedSendsTheModelsLoad checks that a pool's embeddings carry the model's Load
// as its chats do: the host's server sees the one num_ctx and keep_alive.
func TestPoolEmbedSendsTheModelsLoad(t *testing.T) {
	fake := ollamatest.NewFake(t)
	c, err := llm.NewPool(llm.PoolOptions{Hosts: []llm.HostConfig{{URL: fake.URL()}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	keep := time.Minute
	c.SetLimits(llm.Limits{MaxContext: 1024, KeepAlive: &keep})
	if _, err := c.Embed(context.Background(), ollamatest.TinyModelName, []string{"a"}); err != nil {
		t.Fatal(err)
	}
	loads := fake.Loads(ollamatest.TinyModelName)
	if len(loads) != 1 {
		t.Fatalf("loads = %d, want 1", len(loads))
	}
	if ld := loads[0]; ld.Runner.NumCtx != 1024 || ld.KeepAlive == nil || *ld.KeepAlive != keep {
		t.Errorf("embed: %+v, want num_ctx 1024 keep_alive 1m", ld)
	}
}

// TestLoadForFirstCallers checks concurrent first callers all get the probed choice, and that a
// failed probe is not remembered: the next call probes again.
func TestLoadForFirstCallers(t *testing.T) {
	fake := ollamatest.NewFake(t)
	c, err := llm.New(fake.URL(), nil)
	if err != nil {
		t.Fatal(err)
	}
	c.SetLimits(llm.Limits{MaxContext: 4096})
	fake.SetDown(true)
	if _, err := c.LoadFor(context.Background(), ollamatest.TinyModelName); !errors.Is(err, llm.ErrUnavailable) {
		t.Fatalf("LoadFor with the server down: %v, want ErrUnavailable", err)
	}
	fake.SetDown(false)
	var wg sync.WaitGroup
	got := make([]llm.Load, 8)
	for i := range got {
		wg.Go(func() {
			ld, err := c.LoadFor(context.Background(), ollamatest.TinyModelName)
			if err != nil {
				t.Error(err)
			}
			got[i] = ld
		})
	}
	wg.Wait()
	for i, ld := range got {
		if ld.NumCtx != 4096 {
			t.Errorf("caller %d: num_ctx %d, want 4096", i, ld.NumCtx)
		}
	}
}

// TestSetLimitsChoosesAgain checks a config reload (new max_context) changes the Load,
// and a probe that reports a new context length (the model was created again) does too.
func TestSetLimitsChoosesAgain(t *testing.T) {
	fake := ollamatest.NewFake(t)
	c, err := llm.New(fake.URL(), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	c.SetLimits(llm.Limits{MaxContext: 4096})
	if ld, _ := c.LoadFor(ctx, ollamatest.TinyModelName); ld.NumCtx != 4096 {
		t.Fatalf("num_ctx %d, want 4096", ld.NumCtx)
	}
	c.SetLimits(llm.Limits{MaxContext: 2048})
	if ld, _ := c.LoadFor(ctx, ollamatest.TinyModelName); ld.NumCtx != 2048 {
		t.Errorf("after a reload: num_ctx %d, want 2048", ld.NumCtx)
	}
	fake.SetContextLength(1024)
	if _, err := c.Probe(ctx, ollamatest.TinyModelName); err != nil {
		t.Fatal(err)
	}
	if ld, _ := c.LoadFor(ctx, ollamatest.TinyModelName); ld.NumCtx != 1024 {
		t.Errorf("after a probe saw 1024: num_ctx %d, want 1024", ld.NumCtx)
	}
}

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
