// Package ollamatest is agentd's test support for talking to Ollama, in both
// of the forms DESIGN §6 names: an in-process fake that speaks Ollama's wire
// format with scripted replies (for deterministic agent-loop tests), and a
// harness that runs the real Ollama server on a loopback port with a tiny
// random-weight model the package generates itself (for integration tests
// and benchmarks that assert structure and counters, never content).
package ollamatest

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
)

// Shape of the tiny model. The weights are noise, so the answers are noise;
// what matters is that Ollama loads it, applies a JSON-schema grammar to it
// and answers in tens of milliseconds on one CPU thread.
const (
	// TinyContextLength is the context length written into the GGUF file and
	// used as num_ctx when the model is created.
	TinyContextLength = 8192

	tinyEmbedding   = 64
	tinyBlocks      = 2
	tinyHeads       = 2
	tinyHeadsKV     = 2
	tinyFeedForward = 128
	tinyVocab       = 3 + 256 // <unk>, <s>, </s>, <0x00>…<0xFF>
	tinyWeightStd   = 0.02

	ggufAlignment = 32
)

// TinyModelName is the name under which the harness creates the tiny model.
const TinyModelName = "agentd-tiny"

// TinyTemplate renders chat messages for the tiny model. The model cannot
// follow any format, so the template only has to be valid and cheap.
const TinyTemplate = "{{- range .Messages }}<|{{ .Role }}|>{{ .Content }}\n{{ end }}<|assistant|>"

// TinyParameters are the model parameters the tiny model is created with:
// its full context, and one thread (two threads on two cores is ~100× slower).
func TinyParameters() map[string]any {
	return map[string]any{"num_ctx": TinyContextLength, "num_thread": 1}
}

// TinyModelfile returns a Modelfile for the tiny model stored at from
// (e.g. "./tiny.gguf"), equivalent to what the harness creates over the API.
func TinyModelfile(from string) string {
	return fmt.Sprintf("FROM %s\nTEMPLATE \"\"\"%s\"\"\"\nPARAMETER num_ctx %d\nPARAMETER num_thread 1\n",
		from, TinyTemplate, TinyContextLength)
}

// SentencePiece token types, as llama.cpp's llama_token_type defines them.
const (
	tokenTypeUnknown = 2
	tokenTypeControl = 3
	tokenTypeByte    = 6
)

// GGUF value types (gguf_type in ggml's gguf.h).
const (
	ggufUint32  uint32 = 4
	ggufInt32   uint32 = 5
	ggufFloat32 uint32 = 6
	ggufBool    uint32 = 7
	ggufString  uint32 = 8
	ggufArray   uint32 = 9
)

// ggmlTypeF32 is ggml_type GGML_TYPE_F32.
const ggmlTypeF32 uint32 = 0

// WriteTinyModel writes a GGUF v3 file for a llama-architecture model with
// random F32 weights drawn from N(0, 0.02) (norm weights are 1.0), a 259-token
// SentencePiece byte vocabulary and a context length of TinyContextLength.
// The same seed always produces the same bytes.
func WriteTinyModel(w io.Writer, seed int64) error {
	return writeTinyModel(w, seed, TinyContextLength)
}

// kv is one GGUF metadata entry; value is uint32, int32, float32, bool,
// string, []string, []float32 or []int32.
type kv struct {
	key   string
	value any
}

// tensor is one F32 tensor; dims are in GGUF order (ne[0] first, i.e. the
// innermost, contiguous dimension first).
type tensor struct {
	name string
	dims []uint64
	norm bool // all ones instead of random
}

func (t tensor) elements() uint64 {
	n := uint64(1)
	for _, d := range t.dims {
		n *= d
	}
	return n
}

func tinyMetadata(contextLength int) []kv {
	tokens := make([]string, 0, tinyVocab)
	types := make([]int32, 0, tinyVocab)
	tokens = append(tokens, "<unk>", "<s>", "</s>")
	types = append(types, tokenTypeUnknown, tokenTypeControl, tokenTypeControl)
	for b := range 256 {
		tokens = append(tokens, fmt.Sprintf("<0x%02X>", b))
		types = append(types, tokenTypeByte)
	}
	scores := make([]float32, tinyVocab)

	return []kv{
		{"general.architecture", "llama"},
		{"general.name", "agentd-tiny"},
		{"general.file_type", uint32(0)}, // all F32
		{"general.alignment", uint32(ggufAlignment)},
		{"llama.vocab_size", uint32(tinyVocab)},
		{"llama.context_length", uint32(contextLength)},
		{"llama.embedding_length", uint32(tinyEmbedding)},
		// A missing block_count crashes `ollama serve` itself (DESIGN §6).
		{"llama.block_count", uint32(tinyBlocks)},
		{"llama.feed_forward_length", uint32(tinyFeedForward)},
		{"llama.rope.dimension_count", uint32(tinyEmbedding / tinyHeads)},
		{"llama.rope.freq_base", float32(10000)},
		{"llama.attention.head_count", uint32(tinyHeads)},
		{"llama.attention.head_count_kv", uint32(tinyHeadsKV)},
		{"llama.attention.layer_norm_rms_epsilon", float32(1e-5)},
		{"tokenizer.ggml.model", "llama"},
		{"tokenizer.ggml.tokens", tokens},
		{"tokenizer.ggml.scores", scores},
		{"tokenizer.ggml.token_type", types},
		{"tokenizer.ggml.unknown_token_id", uint32(0)},
		{"tokenizer.ggml.bos_token_id", uint32(1)},
		{"tokenizer.ggml.eos_token_id", uint32(2)},
		{"tokenizer.ggml.add_bos_token", true},
		{"tokenizer.ggml.add_eos_token", false},
	}
}

func tinyTensors() []tensor {
	const (
		e   = tinyEmbedding
		kvd = tinyEmbedding / tinyHeads * tinyHeadsKV
		ff  = tinyFeedForward
		v   = tinyVocab
	)
	ts := []tensor{
		{name: "token_embd.weight", dims: []uint64{e, v}},
		{name: "output_norm.weight", dims: []uint64{e}, norm: true},
		{name: "output.weight", dims: []uint64{e, v}},
	}
	for i := range tinyBlocks {
		p := fmt.Sprintf("blk.%d.", i)
		ts = append(ts,
			tensor{name: p + "attn_norm.weight", dims: []uint64{e}, norm: true},
			tensor{name: p + "attn_q.weight", dims: []uint64{e, e}},
			tensor{name: p + "attn_k.weight", dims: []uint64{e, kvd}},
			tensor{name: p + "attn_v.weight", dims: []uint64{e, kvd}},
			tensor{name: p + "attn_output.weight", dims: []uint64{e, e}},
			tensor{name: p + "ffn_norm.weight", dims: []uint64{e}, norm: true},
			tensor{name: p + "ffn_gate.weight", dims: []uint64{e, ff}},
			tensor{name: p + "ffn_up.weight", dims: []uint64{e, ff}},
			tensor{name: p + "ffn_down.weight", dims: []uint64{ff, e}},
		)
	}
	return ts
}

func writeTinyModel(w io.Writer, seed int64, contextLength int) error {
	gw := &ggufWriter{w: bufio.NewWriter(w)}
	meta := tinyMetadata(contextLength)
	tensors := tinyTensors()

	// Header: magic, version, tensor count, metadata count.
	gw.raw([]byte("GGUF"))
	gw.u32(3)
	gw.u64(uint64(len(tensors)))
	gw.u64(uint64(len(meta)))
	for _, m := range meta {
		gw.str(m.key)
		gw.value(m.value)
	}

	// Tensor infos; offsets are relative to the aligned start of the data section.
	var offset uint64
	for _, t := range tensors {
		gw.str(t.name)
		gw.u32(uint32(len(t.dims)))
		for _, d := range t.dims {
			gw.u64(d)
		}
		gw.u32(ggmlTypeF32)
		gw.u64(offset)
		offset = align(offset+4*t.elements(), ggufAlignment)
	}
	gw.pad()

	rng := rand.New(rand.NewPCG(uint64(seed), 0x61676e7464)) // "agntd"
	for _, t := range tensors {
		for range t.elements() {
			v := float32(1)
			if !t.norm {
				v = float32(rng.NormFloat64() * tinyWeightStd)
			}
			gw.f32(v)
		}
		gw.pad()
	}
	if gw.err != nil {
		return fmt.Errorf("write tiny model: %w", gw.err)
	}
	if err := gw.w.Flush(); err != nil {
		return fmt.Errorf("write tiny model: %w", err)
	}
	return nil
}

func align(n, to uint64) uint64 { return (n + to - 1) / to * to }

// ggufWriter writes little-endian GGUF primitives, keeping the first error
// and the byte count (for alignment padding).
type ggufWriter struct {
	w   *bufio.Writer
	n   uint64
	err error
	buf [8]byte
}

func (g *ggufWriter) raw(b []byte) {
	if g.err != nil {
		return
	}
	n, err := g.w.Write(b)
	g.n += uint64(n)
	g.err = err
}

func (g *ggufWriter) u32(v uint32) {
	binary.LittleEndian.PutUint32(g.buf[:4], v)
	g.raw(g.buf[:4])
}

func (g *ggufWriter) u64(v uint64) {
	binary.LittleEndian.PutUint64(g.buf[:8], v)
	g.raw(g.buf[:8])
}

func (g *ggufWriter) f32(v float32) { g.u32(math.Float32bits(v)) }

// str writes a GGUF string: uint64 length, then the bytes (no terminator).
func (g *ggufWriter) str(s string) {
	g.u64(uint64(len(s)))
	g.raw([]byte(s))
}

func (g *ggufWriter) pad() {
	if p := align(g.n, ggufAlignment) - g.n; p > 0 {
		g.raw(make([]byte, p))
	}
}

// array writes the header of an array of n elements of type typ, then each one by put.
func (g *ggufWriter) array(typ uint32, n int, put func(i int)) {
	g.u32(ggufArray)
	g.u32(typ)
	g.u64(uint64(n))
	for i := range n {
		put(i)
	}
}

// value writes a metadata value preceded by its type tag.
func (g *ggufWriter) value(v any) {
	switch v := v.(type) {
	case uint32:
		g.u32(ggufUint32)
		g.u32(v)
	case int32:
		g.u32(ggufInt32)
		g.u32(uint32(v))
	case float32:
		g.u32(ggufFloat32)
		g.f32(v)
	case bool:
		g.u32(ggufBool)
		b := byte(0)
		if v {
			b = 1
		}
		g.raw([]byte{b})
	case string:
		g.u32(ggufString)
		g.str(v)
	case []string:
		g.array(ggufString, len(v), func(i int) { g.str(v[i]) })
	case []float32:
		g.array(ggufFloat32, len(v), func(i int) { g.f32(v[i]) })
	case []int32:
		g.array(ggufInt32, len(v), func(i int) { g.u32(uint32(v[i])) })
	default:
		if g.err == nil {
			g.err = fmt.Errorf("gguf: unsupported metadata type %T", v)
		}
	}
}
