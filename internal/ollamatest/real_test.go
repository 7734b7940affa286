package ollamatest

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"
	"unicode/utf8"

	ollama "github.com/ollama/ollama/api"
	"github.com/ollama/ollama/fs/ggml"
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

// TestWriteTinyModelDecodes reads the file back with Ollama's own GGUF decoder.
func TestWriteTinyModelDecodes(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteTinyModel(&buf, 1); err != nil {
		t.Fatal(err)
	}
	f, err := ggml.Decode(bytes.NewReader(buf.Bytes()), -1)
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	kv := f.KV()
	if got := kv.Architecture(); got != "llama" {
		t.Errorf("architecture = %q", got)
	}
	for key, want := range map[string]uint32{
		"context_length":          TinyContextLength,
		"embedding_length":        64,
		"block_count":             2,
		"feed_forward_length":     128,
		"attention.head_count":    2,
		"attention.head_count_kv": 2,
	} {
		if got := kv.Uint(key); got != want {
			t.Errorf("%s = %d, want %d", key, got, want)
		}
	}
	if got := kv.Float("attention.layer_norm_rms_epsilon"); got != 1e-5 {
		t.Errorf("rms epsilon = %v", got)
	}
	if got := kv.String("tokenizer.ggml.model"); got != "llama" {
		t.Errorf("tokenizer model = %q", got)
	}
	toks, types := kv.Strings("tokenizer.ggml.tokens"), kv.Ints("tokenizer.ggml.token_type")
	if len(toks) != 259 || len(types) != 259 || len(kv.Floats("tokenizer.ggml.scores")) != 259 {
		t.Fatalf("vocab sizes: tokens %d, types %d", len(toks), len(types))
	}
	if toks[0] != "<unk>" || toks[1] != "<s>" || toks[2] != "</s>" || toks[3] != "<0x00>" || toks[258] != "<0xFF>" {
		t.Errorf("tokens = %q…%q", toks[:4], toks[258])
	}
	if types[0] != 2 || types[1] != 3 || types[2] != 3 || types[3] != 6 || types[258] != 6 {
		t.Errorf("token types = %v…%v", types[:4], types[258])
	}

	ts := f.Tensors()
	if got := len(ts.Items()); got != 3+2*9 {
		t.Fatalf("%d tensors", got)
	}
	if ts.Offset%32 != 0 {
		t.Errorf("data section at %d, not 32-byte aligned", ts.Offset)
	}
	data := buf.Bytes()
	last := ts.Items()[len(ts.Items())-1]
	if end := ts.Offset + last.Offset + last.Size(); end != uint64(len(data)) {
		t.Errorf("last tensor ends at %d, file is %d bytes", end, len(data))
	}
	shapes := map[string][]uint64{
		"token_embd.weight":        {64, 259},
		"output.weight":            {64, 259},
		"output_norm.weight":       {64},
		"blk.1.attn_k.weight":      {64, 64},
		"blk.1.ffn_gate.weight":    {64, 128},
		"blk.1.ffn_down.weight":    {128, 64},
		"blk.0.attn_norm.weight":   {64},
		"blk.0.attn_output.weight": {64, 64},
	}
	for _, tn := range ts.Items() {
		if tn.Offset%32 != 0 {
			t.Errorf("%s at offset %d, not aligned", tn.Name, tn.Offset)
		}
		if want, ok := shapes[tn.Name]; ok && !slices.Equal(tn.Shape, want) {
			t.Errorf("%s shape %v, want %v", tn.Name, tn.Shape, want)
		}
		first := math.Float32frombits(binary.LittleEndian.Uint32(data[ts.Offset+tn.Offset:]))
		isNorm := bytes.HasSuffix([]byte(tn.Name), []byte("norm.weight"))
		if isNorm && first != 1 || !isNorm && (first == 0 || math.Abs(float64(first)) > 0.2) {
			t.Errorf("%s first weight %v", tn.Name, first)
		}
	}

	var again bytes.Buffer
	if err := WriteTinyModel(&again, 1); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), again.Bytes()) {
		t.Error("same seed, different bytes")
	}
}
