package ollamatest

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"
	"unicode/utf8"

	ollama "github.com/ollama/ollama/api"
)

// pairSchema is the kind of schema the daemon sends a small model: every
// string bounded and every object closed, so random weights still finish.
const pairSchema = `{
  "type": "object",
  "properties": {
    "observation": {"type": "string", "maxLength": 40},
    "next": {"type": "string", "maxLength": 40}
  },
  "required": ["observation", "next"],
  "additionalProperties": false
}`

// checkPair asserts structure only: the reply is one object with exactly the
// two declared string properties within their maxLength.
func checkPair(content string) error {
	var obj map[string]any
	if err := json.Unmarshal([]byte(content), &obj); err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	keys := make([]string, 0, len(obj))
	for k, v := range obj {
		keys = append(keys, k)
		s, ok := v.(string)
		if !ok {
			return fmt.Errorf("%s is %T, want string", k, v)
		}
		if n := utf8.RuneCountInString(s); n > 40 {
			return fmt.Errorf("%s has %d characters, maxLength is 40", k, n)
		}
	}
	slices.Sort(keys)
	if !slices.Equal(keys, []string{"next", "observation"}) {
		return fmt.Errorf("keys %v, want [next observation]", keys)
	}
	return nil
}

func realChat(ctx context.Context, c *ollama.Client, i int) (ollama.ChatResponse, error) {
	stream := false
	req := &ollama.ChatRequest{
		Model:  TinyModelName,
		Stream: &stream,
		Format: json.RawMessage(pairSchema),
		Messages: []ollama.Message{
			{Role: "system", Content: "You are a test agent. Answer with JSON only."},
			{Role: "user", Content: fmt.Sprintf("Step %d: what do you observe, and what next?", i)},
		},
		// A fixed seed per request keeps the noise reproducible; num_predict
		// bounds a reply that never closes (~150 tokens is typical here).
		Options: map[string]any{"num_ctx": TinyContextLength, "num_predict": 512, "seed": i},
	}
	var resp ollama.ChatResponse
	err := c.Chat(ctx, req, func(r ollama.ChatResponse) error { resp = r; return nil })
	return resp, err
}

func TestRealTinyModel(t *testing.T) {
	r := StartReal(t)
	c := r.Client()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	show, err := c.Show(ctx, &ollama.ShowRequest{Model: TinyModelName})
	if err != nil {
		t.Fatal(err)
	}
	if got := show.ModelInfo["llama.context_length"]; got != float64(TinyContextLength) {
		t.Errorf("context_length = %v", got)
	}

	for i := range 5 {
		start := time.Now()
		resp, err := realChat(ctx, c, i)
		if err != nil {
			t.Fatalf("chat %d: %v", i, err)
		}
		elapsed := time.Since(start)
		t.Logf("reply %d: %v (load %v, prompt %d tokens, eval %d tokens, done_reason %s)",
			i, elapsed.Round(time.Millisecond), resp.LoadDuration.Round(time.Millisecond),
			resp.PromptEvalCount, resp.EvalCount, resp.DoneReason)
		if err := checkPair(resp.Message.Content); err != nil {
			t.Errorf("reply %d (done_reason %s): %v\n%q", i, resp.DoneReason, err, resp.Message.Content)
		}
		if !resp.Done || resp.PromptEvalCount <= 0 || resp.EvalCount <= 0 {
			t.Errorf("reply %d counters: done %v, prompt_eval_count %d, eval_count %d",
				i, resp.Done, resp.PromptEvalCount, resp.EvalCount)
		}
	}
}

func TestRealRestart(t *testing.T) {
	r := StartReal(t)
	c := r.Client()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := realChat(ctx, c, 1); err != nil {
		t.Fatalf("chat before stop: %v", err)
	}

	for _, tc := range []struct {
		name string
		down func()
	}{{"stop", r.Stop}, {"kill", r.Kill}} {
		t.Run(tc.name, func(t *testing.T) {
			tc.down()
			if r.Running() {
				t.Fatal("still running")
			}
			if _, err := c.Version(ctx); err == nil {
				t.Fatal("Version answered while down")
			}

			start := time.Now()
			r.Restart(t)
			t.Logf("restart took %v", time.Since(start).Round(time.Millisecond))
			resp, err := realChat(ctx, c, 2)
			if err != nil {
				t.Fatalf("chat after restart: %v", err)
			}
			if err := checkPair(resp.Message.Content); err != nil {
				t.Errorf("reply after restart: %v", err)
			}
		})
	}
}
