package ollamatest

import (
	"context"
	"testing"
	"time"

	ollama "github.com/ollama/ollama/api"
)

// TestFakeReloadsLikeOllama checks the fake reloads a model exactly when Ollama 0.17.4's
// scheduler would: runner options changed, or the call before had keep_alive 0.
func TestFakeReloadsLikeOllama(t *testing.T) {
	zero := ollama.Duration{Duration: 0}
	minute := ollama.Duration{Duration: time.Minute}
	type call struct {
		opts      map[string]any
		keepAlive *ollama.Duration
	}
	for _, tc := range []struct {
		name    string
		calls   []call
		reloads int
	}{
		{"same_num_ctx", []call{{opts: map[string]any{"num_ctx": 2048}}, {opts: map[string]any{"num_ctx": 2048}}}, 0},
		{"num_predict_and_temperature_vary", []call{
			{opts: map[string]any{"num_ctx": 2048, "num_predict": 512}},
			{opts: map[string]any{"num_ctx": 2048, "num_predict": 64, "temperature": 0.1}}}, 0},
		{"num_ctx_changes", []call{{opts: map[string]any{"num_ctx": 2048}}, {opts: map[string]any{"num_ctx": 8192}}}, 1},
		{"num_ctx_unset_is_the_modelfile_default", []call{{opts: map[string]any{"num_ctx": FakeContextLength}}, {}}, 0},
		{"num_thread_changes", []call{{opts: map[string]any{"num_thread": 1}}, {opts: map[string]any{"num_thread": 2}}}, 1},
		{"num_gpu_minus_one_matches_any", []call{{opts: map[string]any{"num_gpu": 3}}, {opts: map[string]any{"num_gpu": -1}}}, 0},
		{"keep_alive_changes", []call{{keepAlive: &minute}, {}}, 0},
		{"keep_alive_zero_unloads", []call{{keepAlive: &zero}, {keepAlive: &minute}}, 1},
		{"back_and_forth", []call{
			{opts: map[string]any{"num_ctx": 2048}}, {opts: map[string]any{"num_ctx": 8192}},
			{opts: map[string]any{"num_ctx": 2048}}}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := NewFake(t)
			c := f.Client()
			for _, cl := range tc.calls {
				req := &ollama.ChatRequest{Model: TinyModelName, Messages: userMsg("hi"), Stream: new(bool),
					Options: cl.opts, KeepAlive: cl.keepAlive}
				if err := c.Chat(context.Background(), req, func(ollama.ChatResponse) error { return nil }); err != nil {
					t.Fatal(err)
				}
			}
			if got := f.Reloads(); len(got) != tc.reloads {
				t.Errorf("reloads = %d %v, want %d", len(got), got, tc.reloads)
			}
			if got := len(f.Loads(TinyModelName)); got != len(tc.calls) {
				t.Errorf("loads recorded = %d, want %d", got, len(tc.calls))
			}
		})
	}
}

// TestFakeEmbedLoads checks embeddings count toward a model's loads like chat calls do.
func TestFakeEmbedLoads(t *testing.T) {
	f := NewFake(t)
	c := f.Client()
	ctx := context.Background()
	if _, err := c.Embed(ctx, &ollama.EmbedRequest{Model: TinyModelName, Input: "a", Options: map[string]any{"num_ctx": 512}}); err != nil {
		t.Fatal(err)
	}
	req := &ollama.ChatRequest{Model: TinyModelName, Messages: userMsg("hi"), Stream: new(bool), Options: map[string]any{"num_ctx": 1024}}
	if err := c.Chat(ctx, req, func(ollama.ChatResponse) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if got := f.Reloads(); len(got) != 1 || got[0].From.Runner.NumCtx != 512 || got[0].To.Runner.NumCtx != 1024 {
		t.Errorf("reloads = %v, want one from 512 to 1024", got)
	}
}
