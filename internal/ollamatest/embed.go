package ollamatest

import (
	"encoding/json"
	"hash/fnv"
	"math"
	"net/http"
	"strings"

	ollama "github.com/ollama/ollama/api"
)

// EmbedDims is the length of the fake's embeddings.
const EmbedDims = 32

// handleEmbed answers /api/embed for any known model with a deterministic bag-of-words
// vector per input (each lowercased word hashed into one of EmbedDims buckets), so texts
// sharing words are similar. Down, busy and unknown models fail as they do for chat.
func (f *Fake) handleEmbed(w http.ResponseWriter, r *http.Request) {
	var req ollama.EmbedRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	f.mu.Lock()
	exists, busy := f.hasModel(req.Model), f.busy
	f.embedCalls++
	if exists && !busy {
		f.loadFor(req.Model, req.Options, req.KeepAlive)
	}
	f.mu.Unlock()
	if refused(w, req.Model, exists, busy) {
		return
	}
	var inputs []string
	switch in := req.Input.(type) {
	case string:
		inputs = []string{in}
	case []any:
		for _, v := range in {
			s, _ := v.(string)
			inputs = append(inputs, s)
		}
	}
	resp := ollama.EmbedResponse{Model: req.Model}
	for _, s := range inputs {
		resp.Embeddings = append(resp.Embeddings, FakeEmbedding(s))
	}
	writeJSON(w, http.StatusOK, resp)
}

// FakeEmbedding is the vector the fake returns for s.
func FakeEmbedding(s string) []float32 {
	v := make([]float32, EmbedDims)
	for _, word := range strings.Fields(strings.ToLower(s)) {
		h := fnv.New32a()
		h.Write([]byte(strings.Trim(word, ".,;:!?\"'()")))
		v[h.Sum32()%EmbedDims]++
	}
	var n float64
	for _, x := range v {
		n += float64(x) * float64(x)
	}
	if n == 0 {
		v[0] = 1
		return v
	}
	for i := range v {
		v[i] = float32(float64(v[i]) / math.Sqrt(n))
	}
	return v
}

// EmbedCalls counts /api/embed requests.
func (f *Fake) EmbedCalls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.embedCalls
}
