package llm_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/daemon/llm"
	"github.com/agentd/agentd/internal/ollamatest"
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
