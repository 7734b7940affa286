package ollamatest

import (
	"fmt"
	"slices"
	"time"

	ollama "github.com/ollama/ollama/api"
)

// Load is what decides how Ollama 0.17.4 loads a model for a request: the runner options
// (ollama.Runner: num_ctx, num_batch, num_gpu, main_gpu, use_mmap, num_thread), the request's
// value over the model's Modelfile default, and keep_alive. Ollama reloads a loaded model
// when the runner options differ (server/sched.go needsReload, num_gpu < 0 matching any),
// and unloads it after a call whose keep_alive is 0.
type Load struct {
	Runner    ollama.Runner
	KeepAlive *time.Duration // nil: the server's default
}

// Reload is one time the fake, as Ollama would, had to load a model again that it had
// loaded already: a request changed its runner options, or the call before unloaded it.
type Reload struct {
	Model    string
	From, To Load
	Why      string
}

func (r Reload) String() string {
	return fmt.Sprintf("%s reloaded (%s): %+v → %+v", r.Model, r.Why, r.From.Runner, r.To.Runner)
}

// modelLoad is the fake's record of one model: the options it is loaded with.
type modelLoad struct {
	cur      Load
	unloaded bool // the last call had keep_alive 0
}

// Loads returns the Load of every chat and embed request to model so far, oldest first.
func (f *Fake) Loads(model string) []Load {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.loadLog[fullName(model)])
}

// Reloads returns every reload the requests so far would have caused on a real server.
// A workload that keeps each model's options steady has none.
func (f *Fake) Reloads() []Reload {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.reloads)
}

// loadFor records a request's Load for model and any reload it causes, as Ollama's
// scheduler decides it; f.mu must be held.
func (f *Fake) loadFor(model string, opts map[string]any, keepAlive *ollama.Duration) {
	ld := Load{Runner: ollama.Runner{NumCtx: f.ContextLength}} // the fake's Modelfile: PARAMETER num_ctx
	if n, ok := opts["num_ctx"].(float64); ok {
		ld.Runner.NumCtx = int(n)
	}
	ld.Runner.NumCtx = max(ld.Runner.NumCtx, 4) // GetRunner's floor
	if n, ok := opts["num_batch"].(float64); ok {
		ld.Runner.NumBatch = int(n)
	}
	if n, ok := opts["num_gpu"].(float64); ok {
		ld.Runner.NumGPU = int(n)
	}
	if n, ok := opts["main_gpu"].(float64); ok {
		ld.Runner.MainGPU = int(n)
	}
	if b, ok := opts["use_mmap"].(bool); ok {
		ld.Runner.UseMMap = &b
	}
	if n, ok := opts["num_thread"].(float64); ok {
		ld.Runner.NumThread = int(n)
	}
	if keepAlive != nil {
		d := keepAlive.Duration
		ld.KeepAlive = &d
	}
	model = fullName(model)
	if f.loaded == nil {
		f.loaded = map[string]*modelLoad{}
		f.loadLog = map[string][]Load{}
	}
	f.loadLog[model] = append(f.loadLog[model], ld)
	m, ok := f.loaded[model]
	switch {
	case !ok:
		f.loaded[model] = &modelLoad{cur: ld}
	case m.unloaded:
		f.reloads = append(f.reloads, Reload{Model: model, From: m.cur, To: ld, Why: "the call before had keep_alive 0"})
	case !sameRunner(m.cur.Runner, ld.Runner):
		f.reloads = append(f.reloads, Reload{Model: model, From: m.cur, To: ld, Why: "runner options changed"})
	}
	if ok {
		m.cur = ld
		m.unloaded = false
	}
	if ld.KeepAlive != nil && *ld.KeepAlive == 0 {
		f.loaded[model].unloaded = true
	}
}

// sameRunner is needsReload's comparison: num_gpu < 0 on the new request matches any.
func sameRunner(old, new ollama.Runner) bool {
	if new.NumGPU < 0 {
		old.NumGPU, new.NumGPU = -1, -1
	}
	return old.NumCtx == new.NumCtx && old.NumBatch == new.NumBatch && old.NumGPU == new.NumGPU &&
		old.MainGPU == new.MainGPU && old.NumThread == new.NumThread &&
		((old.UseMMap == nil && new.UseMMap == nil) || (old.UseMMap != nil && new.UseMMap != nil && *old.UseMMap == *new.UseMMap))
}
