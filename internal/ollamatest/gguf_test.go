package ollamatest

import (
	"bytes"
	"encoding/binary"
	"math"
	"slices"
	"testing"

	"github.com/ollama/ollama/fs/ggml"
)

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
