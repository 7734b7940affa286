package llm

import (
	"context"
	"sync"
	"time"
)

// Load is the part of a request that makes Ollama reload a model it has loaded. Ollama
// 0.17.4 (server/sched.go needsReload) reloads whenever a request's runner options —
// num_ctx, num_batch, num_gpu, main_gpu, use_mmap, num_thread — differ from the loaded
// ones; agentd sets only num_ctx of those, and leaves the rest to the Modelfile. keep_alive
// does not reload, but one call with 0 unloads the model, so it is chosen here too.
// Everything else (num_predict, temperature, format) may vary per request.
type Load struct {
	// NumCtx is the context window every request to the model asks for; 0 leaves the
	// server's default (neither the probe nor the config knows a length).
	NumCtx int
	// KeepAlive is how long the server keeps the model loaded after a call; nil for its default.
	KeepAlive *time.Duration
}

// Limits are the config's part of every model's Load: [ollama] max_context and keep_alive.
type Limits struct {
	MaxContext int // a hard cap on num_ctx; 0 for none
	KeepAlive  *time.Duration
}

// loads chooses each model's Load once, from its probe and the Limits, so that every
// request to that model (steps, profiles, summaries, web summaries, teams, embeddings)
// carries the same options and the server never reloads it between them. mu guards all.
type loads struct {
	mu      sync.Mutex
	managed bool                     // SetLimits was called: Chat and Embed apply the choice
	limits  Limits                   // the config's part
	probed  map[string]int           // model → ContextLength of its last good probe
	chosen  map[string]Load          // model → its Load, made from probed and limits
	probing map[string]chan struct{} // model → closed when its first probe ends
}

// SetLimits sets the config's part of every model's Load, at start and on each config
// reload. Once it is called, Chat and Embed send every request with its model's Load
// (LoadFor), whatever the request says: no caller can make the server reload a model.
// Changed limits choose again (the one reload a config change costs).
func (c *Client) SetLimits(l Limits) {
	c.loads.mu.Lock()
	defer c.loads.mu.Unlock()
	if c.loads.managed && c.loads.limits.MaxContext == l.MaxContext && sameDuration(c.loads.limits.KeepAlive, l.KeepAlive) {
		return
	}
	c.loads.managed, c.loads.limits = true, l
	c.loads.chosen = nil
}

// LoadFor returns model's Load: what every request to it is sent with. The first call for a
// model probes it (once, however many callers ask at the same time) so the choice is made
// from the model's context length and never changes when a probe answers later. Callers
// budget their prompts to its NumCtx. Errors are the probe's (ErrUnavailable,
// *ModelNotFoundError, …).
func (c *Client) LoadFor(ctx context.Context, model string) (Load, error) {
	for {
		c.loads.mu.Lock()
		if ld, ok := c.loads.chosen[model]; ok {
			c.loads.mu.Unlock()
			return ld, nil
		}
		if _, ok := c.loads.probed[model]; ok {
			ld := c.loads.chooseLocked(model)
			c.loads.mu.Unlock()
			return ld, nil
		}
		wait, busy := c.loads.probing[model]
		if !busy {
			wait = make(chan struct{})
			if c.loads.probing == nil {
				c.loads.probing = map[string]chan struct{}{}
			}
			c.loads.probing[model] = wait
		}
		c.loads.mu.Unlock()
		if busy { // another caller is probing: use its answer, or probe again if it failed
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return Load{}, c.classify(ctx, "show", model, ctx.Err())
			}
		}
		_, err := c.Probe(ctx, model) // records the context length (probed)
		c.loads.mu.Lock()
		delete(c.loads.probing, model)
		c.loads.mu.Unlock()
		close(wait)
		if err != nil {
			return Load{}, err
		}
	}
}

// probedModel records a good probe's context length; a changed length (the model was
// created again with another num_ctx) chooses the model's Load again.
func (c *Client) probedModel(model string, contextLength int) {
	c.loads.mu.Lock()
	defer c.loads.mu.Unlock()
	if c.loads.probed == nil {
		c.loads.probed = map[string]int{}
	}
	if old, ok := c.loads.probed[model]; ok && old == contextLength {
		return
	}
	c.loads.probed[model] = contextLength
	delete(c.loads.chosen, model)
}

// chooseLocked makes model's Load: the probed context length, capped by max_context.
func (l *loads) chooseLocked(model string) Load {
	n := l.probed[model]
	if m := l.limits.MaxContext; m > 0 && (n <= 0 || m < n) {
		n = m
	}
	ld := Load{NumCtx: n, KeepAlive: l.limits.KeepAlive}
	if l.chosen == nil {
		l.chosen = map[string]Load{}
	}
	l.chosen[model] = ld
	return ld
}

// requestLoad is the Load a Chat or Embed request for model is sent with, and false when
// SetLimits was never called (the request goes as its caller made it). Once a model's Load
// is chosen it takes loads.mu once, on every call.
func (c *Client) requestLoad(ctx context.Context, model string) (Load, bool, error) {
	c.loads.mu.Lock()
	managed := c.loads.managed
	ld, chosen := c.loads.chosen[model]
	c.loads.mu.Unlock()
	if !managed || chosen {
		return ld, managed, nil
	}
	ld, err := c.LoadFor(ctx, model)
	return ld, true, err
}

func sameDuration(a, b *time.Duration) bool {
	return (a == nil && b == nil) || (a != nil && b != nil && *a == *b)
}
