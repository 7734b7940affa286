package llm

import "time"

// A caller that got ErrUnavailable waits with backoff before it calls again; when the
// prober finds a host back, the wait is cut short for the callers whose model that host
// serves (Servable), so an agent resumes when its server does, not up to a backoff later.

// servableWatch is one caller waiting for a host to serve model. Guarded by Pool.mu.
type servableWatch struct {
	model string
	ch    chan struct{}
}

// Servable returns a channel that is closed once a host of the pool that serves model
// comes (back) up, lists it, or is let serve it again after it failed it; stop forgets
// the wait. Call it before waiting out ErrUnavailable (or a missing model): the channel
// ends the wait early. A client made by New has no prober: its channel never closes.
func (c *Client) Servable(model string) (ch <-chan struct{}, stop func()) {
	if c.pool == nil {
		return nil, func() {}
	}
	return c.pool.servable(model)
}

func (p *Pool) servable(model string) (<-chan struct{}, func()) {
	w := &servableWatch{model: model, ch: make(chan struct{})}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.watches == nil {
		p.watches = map[*servableWatch]bool{}
	}
	p.watches[w] = true
	return w.ch, func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		delete(p.watches, w)
	}
}

// serves reports whether a host that is up is known to serve model at now: it lists it
// (or has not listed its models yet) and is not keeping it off. Caller holds p.mu.
func (p *Pool) serves(model string, now time.Time) bool {
	for _, h := range p.hosts {
		if h.up && h.knows(model) && !h.troubledNow(model, now) {
			return true
		}
	}
	return false
}

// wakeServable ends the waits for the models that changed (a host came back, listed
// them, or let them on again) and that a host serves now. Only a change wakes: a caller
// whose call failed while its model looked served (a busy server) waits its backoff.
// Caller holds p.mu.
func (p *Pool) wakeServable(changed func(model string) bool) {
	now := time.Now()
	for w := range p.watches {
		if changed(w.model) && p.serves(w.model, now) {
			close(w.ch)
			delete(p.watches, w)
		}
	}
}

// troubleEnded reports whether model's time off some host ended in (after, now]. Caller
// holds p.mu.
func (p *Pool) troubleEnded(model string, after, now time.Time) bool {
	key := modelKey(model)
	for _, h := range p.hosts {
		if hm := h.troubled[key]; hm != nil && hm.until.After(after) && !hm.until.After(now) {
			return true
		}
	}
	return false
}
