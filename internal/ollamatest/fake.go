package ollamatest

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	ollama "github.com/ollama/ollama/api"
	"github.com/ollama/ollama/types/model"
)

// Defaults of a new Fake.
const (
	// FakeContextLength is the context length a new Fake reports for every model.
	FakeContextLength = 8192
	// FakeReply is the reply used when nothing is scripted and no Default or
	// OnChat is set and the request has no format; with a format it is "{}".
	FakeReply = "ok"
)

// Fake is an in-process HTTP server speaking Ollama's wire format on
// 127.0.0.1, for deterministic agent-loop tests. It serves GET /api/version,
// GET /api/tags, POST /api/show and POST /api/chat (streamed as NDJSON or
// not, as the request asks). Replies come from, in order: the Script queue,
// the OnChat func, the Default func, then FakeReply.
//
// Set the exported fields before the requests they should affect; while
// requests may be in flight, use the Set methods instead. All methods are
// safe for concurrent use.
type Fake struct {
	// Models are the model names that exist ("name" and "name:latest" are the
	// same model); others get Ollama's 404. NewFake sets []string{TinyModelName}.
	Models []string
	// ContextLength is reported by /api/show as <arch>.context_length.
	ContextLength int
	// Delay is how long each chat request takes before its reply starts.
	Delay time.Duration
	// Default, if set, makes the reply when the script is empty and OnChat is unset.
	Default func(req *ollama.ChatRequest) string

	srv    *httptest.Server
	closed chan struct{}

	// Generation slots and the time spent in them (parallel.go), guarded by mu.
	sem         chan struct{}
	inFlight    int
	maxInFlight int
	busyTime    time.Duration

	mu       sync.Mutex
	script   []string
	onChat   func(req *ollama.ChatRequest) (string, error)
	down     bool
	busy     bool
	loadErr  map[string]string // full model name → why it cannot be loaded (SetLoadError)
	requests []ollama.ChatRequest
	// embedCalls counts /api/embed requests (embed.go).
	embedCalls int
	// loaded, loadLog and reloads follow how each model is loaded (load.go).
	loaded  map[string]*modelLoad
	loadLog map[string][]Load
	reloads []Reload
}

// NewFake starts a Fake and closes it when the test ends.
func NewFake(tb testing.TB) *Fake {
	tb.Helper()
	f := &Fake{
		Models:        []string{TinyModelName},
		ContextLength: FakeContextLength,
		closed:        make(chan struct{}),
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/version", f.handleVersion)
	// GET / (and HEAD /, which ollama.Client.Heartbeat uses) answers like Ollama does.
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "Ollama is running") })
	mux.HandleFunc("GET /api/tags", f.handleTags)
	mux.HandleFunc("POST /api/show", f.handleShow)
	mux.HandleFunc("POST /api/chat", f.handleChat)
	mux.HandleFunc("POST /api/embed", f.handleEmbed)
	f.srv = httptest.NewServer(f.gate(mux))
	tb.Cleanup(f.Close)
	return f
}

// URL is the fake's base URL, e.g. http://127.0.0.1:41234.
func (f *Fake) URL() string { return f.srv.URL }

// Addr is the fake's host:port, the form OLLAMA_HOST takes.
func (f *Fake) Addr() string { return strings.TrimPrefix(f.srv.URL, "http://") }

// Client returns an Ollama API client for the fake.
func (f *Fake) Client() *ollama.Client {
	u, _ := url.Parse(f.srv.URL)
	return ollama.NewClient(u, f.srv.Client())
}

// Close stops the fake, cutting short any Delay in progress. NewFake's
// cleanup calls it; calling it twice is fine.
func (f *Fake) Close() {
	f.mu.Lock()
	select {
	case <-f.closed:
		f.mu.Unlock()
		return
	default:
		close(f.closed)
	}
	f.mu.Unlock()
	f.srv.CloseClientConnections()
	f.srv.Close()
}

// Script queues replies (message contents) for the next chat requests, in order.
func (f *Fake) Script(replies ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.script = append(f.script, replies...)
}

// Pending is how many scripted replies have not been used yet.
func (f *Fake) Pending() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.script)
}

// OnChat sets a func that makes the reply for each chat request the script
// does not answer; nil unsets it. An error becomes HTTP 500 {"error": err};
// an ollama.StatusError keeps its status code and message.
func (f *Fake) OnChat(fn func(req *ollama.ChatRequest) (content string, err error)) {
	set(f, &f.onChat, fn)
}

// SetDown makes every request fail as if the server were dead: the
// connection is closed without a response. SetDown(false) revives it.
func (f *Fake) SetDown(down bool) { set(f, &f.down, down) }

// SetBusy makes every chat request get Ollama's 503 "server busy" answer.
func (f *Fake) SetBusy(busy bool) { set(f, &f.busy, busy) }

// SetLoadError makes every chat request for model fail the way Ollama 0.17.4 answers
// when its scheduler cannot load a model (server/routes.go handleScheduleError): HTTP 500
// with the loader's error, such as "model requires more system memory (5.2 GiB) than is
// available (1.9 GiB)". Other models are served as before. An empty msg clears it.
func (f *Fake) SetLoadError(model, msg string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.loadErr == nil {
		f.loadErr = map[string]string{}
	}
	if msg == "" {
		delete(f.loadErr, fullName(model))
		return
	}
	f.loadErr[fullName(model)] = msg
}

// SetModels replaces Models.
func (f *Fake) SetModels(names ...string) { set(f, &f.Models, names) }

// SetContextLength replaces ContextLength.
func (f *Fake) SetContextLength(n int) { set(f, &f.ContextLength, n) }

// SetDelay replaces Delay.
func (f *Fake) SetDelay(d time.Duration) { set(f, &f.Delay, d) }

// SetDefault replaces Default.
func (f *Fake) SetDefault(fn func(req *ollama.ChatRequest) string) { set(f, &f.Default, fn) }

// SetDefaultNth makes Default answer its n-th request (from 1) with next(n): a model that
// does something new at every step, for as long as a test lets it.
func (f *Fake) SetDefaultNth(next func(n int) string) {
	var n atomic.Int64
	f.SetDefault(func(*ollama.ChatRequest) string { return next(int(n.Add(1))) })
}

// Requests returns the chat requests received so far (including ones
// answered with an error), oldest first.
func (f *Fake) Requests() []ollama.ChatRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.requests)
}

// gate applies SetDown to every request.
func (f *Fake) gate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		down := f.down
		f.mu.Unlock()
		if down {
			if hj, ok := w.(http.Hijacker); ok {
				if conn, _, err := hj.Hijack(); err == nil {
					conn.Close()
					return
				}
			}
			writeError(w, http.StatusServiceUnavailable, "ollamatest: server is down")
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (f *Fake) handleVersion(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"version": OllamaVersion})
}

func (f *Fake) handleTags(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	names := slices.Clone(f.Models)
	f.mu.Unlock()
	resp := ollama.ListResponse{Models: []ollama.ListModelResponse{}}
	for _, n := range names {
		n = fullName(n)
		resp.Models = append(resp.Models, ollama.ListModelResponse{
			Name:       n,
			Model:      n,
			ModifiedAt: fakeTime,
			Size:       469992,
			Digest:     fmt.Sprintf("%064x", len(n)),
			Details:    fakeDetails,
		})
	}
	writeJSON(w, http.StatusOK, resp)
}

func (f *Fake) handleShow(w http.ResponseWriter, r *http.Request) {
	var req ollama.ShowRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	name := req.Model
	if name == "" {
		name = req.Name
	}
	if name == "" {
		writeError(w, http.StatusBadRequest, "model is required")
		return
	}
	f.mu.Lock()
	exists, ctxLen := f.hasModel(name), f.ContextLength
	f.mu.Unlock()
	if !exists {
		writeError(w, http.StatusNotFound, notFound(name))
		return
	}
	writeJSON(w, http.StatusOK, ollama.ShowResponse{
		Template:   TinyTemplate,
		Parameters: fmt.Sprintf("num_ctx %d", ctxLen),
		Details:    fakeDetails,
		ModelInfo: map[string]any{
			"general.architecture":    "llama",
			"general.parameter_count": 115392,
			"llama.context_length":    ctxLen,
			"llama.embedding_length":  tinyEmbedding,
		},
		Capabilities: []model.Capability{model.CapabilityCompletion},
		ModifiedAt:   fakeTime,
	})
}

// refused answers, as Ollama does, a request for a model the server does not have or one
// that comes while it is busy, and reports whether it did.
func refused(w http.ResponseWriter, model string, exists, busy bool) bool {
	switch {
	case !exists:
		writeError(w, http.StatusNotFound, notFound(model))
	case busy:
		writeError(w, http.StatusServiceUnavailable, "server busy, please try again.  maximum pending requests exceeded")
	default:
		return false
	}
	return true
}

func (f *Fake) handleChat(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	var req ollama.ChatRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if req.Model == "" {
		writeError(w, http.StatusBadRequest, "model is required")
		return
	}

	f.mu.Lock()
	f.requests = append(f.requests, req)
	exists, busy, delay := f.hasModel(req.Model), f.busy, f.Delay
	loadErr := f.loadErr[fullName(req.Model)]
	ctxLen := numCtx(&req, f.ContextLength)
	if exists && !busy && loadErr == "" {
		f.loadFor(req.Model, req.Options, req.KeepAlive)
	}
	f.mu.Unlock()
	prompt := promptTokens(req.Messages)
	if refused(w, req.Model, exists, busy) {
		return
	}
	switch {
	case loadErr != "":
		writeError(w, http.StatusInternalServerError, loadErr)
		return
	case prompt > ctxLen && req.Truncate != nil && !*req.Truncate:
		// Ollama's answer with truncate:false; without it Ollama silently
		// drops the oldest non-system messages instead.
		writeError(w, http.StatusBadRequest, "the input length exceeds the context length")
		return
	}
	if !f.enter(r) {
		return
	}
	defer f.leave(time.Now())
	if delay > 0 {
		t := time.NewTimer(delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-r.Context().Done():
			return
		case <-f.closed:
			return
		}
	}

	content, err := f.reply(&req)
	if err != nil {
		var se ollama.StatusError
		if errors.As(err, &se) && se.StatusCode != 0 {
			writeError(w, se.StatusCode, se.ErrorMessage)
			return
		}
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}

	final := ollama.ChatResponse{
		Model:      req.Model,
		CreatedAt:  time.Now().UTC(),
		Message:    ollama.Message{Role: "assistant", Content: content},
		Done:       true,
		DoneReason: "stop",
		Metrics: ollama.Metrics{
			PromptEvalCount: min(prompt, ctxLen),
			EvalCount:       tokens(content),
		},
	}
	if req.Stream != nil && !*req.Stream {
		final.TotalDuration = time.Since(start)
		writeJSON(w, http.StatusOK, final)
		return
	}

	// Streaming: the content in a few chunks, then an empty done chunk with
	// the counters, as Ollama sends it.
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	enc := json.NewEncoder(w)
	flusher, _ := w.(http.Flusher)
	for _, piece := range chunks(content) {
		if err := enc.Encode(ollama.ChatResponse{
			Model:     req.Model,
			CreatedAt: time.Now().UTC(),
			Message:   ollama.Message{Role: "assistant", Content: piece},
		}); err != nil {
			return
		}
		if flusher != nil {
			flusher.Flush()
		}
	}
	final.Message.Content = ""
	final.CreatedAt = time.Now().UTC()
	final.TotalDuration = time.Since(start)
	_ = enc.Encode(final)
}

// reply picks the content for req: script, OnChat, Default, FakeReply.
func (f *Fake) reply(req *ollama.ChatRequest) (string, error) {
	f.mu.Lock()
	if len(f.script) > 0 {
		content := f.script[0]
		f.script = f.script[1:]
		f.mu.Unlock()
		return content, nil
	}
	onChat, def := f.onChat, f.Default
	f.mu.Unlock()
	switch {
	case onChat != nil:
		return onChat(req)
	case def != nil:
		return def(req), nil
	case len(req.Format) > 0:
		return "{}", nil
	default:
		return FakeReply, nil
	}
}

// hasModel reports whether name is in Models; f.mu must be held.
func (f *Fake) hasModel(name string) bool {
	name = fullName(name)
	return slices.ContainsFunc(f.Models, func(m string) bool { return fullName(m) == name })
}

// fullName adds Ollama's default ":latest" tag to a name without one.
func fullName(name string) string {
	if i := strings.LastIndex(name, ":"); i < 0 || strings.Contains(name[i:], "/") {
		return name + ":latest"
	}
	return name
}

// notFound is how Ollama 0.17.4 words a missing model on /api/chat and
// /api/show (the "try pulling it first" variant only appears when a
// manifest exists but its blobs are gone).
func notFound(name string) string { return fmt.Sprintf("model '%s' not found", name) }

var (
	fakeTime    = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	fakeDetails = ollama.ModelDetails{
		Format:            "gguf",
		Family:            "llama",
		Families:          []string{"llama"},
		ParameterSize:     "115K",
		QuantizationLevel: "F32",
	}
)

// numCtx is the request's num_ctx option, else def.
func numCtx(req *ollama.ChatRequest, def int) int {
	if v, ok := req.Options["num_ctx"].(float64); ok && v > 0 {
		return int(v)
	}
	return def
}

// tokens is a rough, deterministic token count (about four bytes a token,
// like real vocabularies; the tiny model's byte vocabulary needs about one a byte).
func tokens(s string) int {
	if s == "" {
		return 0
	}
	return len(s)/4 + 1
}

// promptTokens counts the messages plus a few template tokens per message.
func promptTokens(msgs []ollama.Message) int {
	n := 1
	for _, m := range msgs {
		n += 4 + tokens(m.Content)
	}
	return n
}

// chunks splits s into up to four pieces on rune boundaries.
func chunks(s string) []string {
	if s == "" {
		return nil
	}
	r := []rune(s)
	size := max(1, (len(r)+3)/4)
	var out []string
	for len(r) > 0 {
		n := min(size, len(r))
		out = append(out, string(r[:n]))
		r = r[n:]
	}
	return out
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}

// set sets *field to v under f's lock: the one way the setters write.
func set[T any](f *Fake, field *T, v T) {
	f.mu.Lock()
	defer f.mu.Unlock()
	*field = v
}
