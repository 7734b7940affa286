package llm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentd/agentd/internal/backoff"
)

// A pool spreads model calls over several Ollama servers. Every chat call waits its turn
// in the fair queue (queue.go), then goes to a healthy host that has the model, least
// outstanding requests first. A host that does not answer (or answers 502/503/504) is
// marked down: the call goes on to another host at once, and a prober asks the down
// host's /api/tags again with backoff until it answers. A host that cannot run one model
// (500) keeps serving the others (pool_errors.go). A call fails with ErrUnavailable only
// when no host can serve its model, which is when the agent loop shows waiting_for_model.
//
// Ollama stays the engine: the pool never changes a request, so every host sees the same
// num_ctx per model that the caller chose, and reloads no more than with one server.

// HostConfig is one Ollama server of a pool.
type HostConfig struct {
	// URL is the server's address, in any form OLLAMA_HOST takes.
	URL string
	// Models, when set, are the only models sent to this host; empty means the ones its
	// /api/tags lists, re-read every PoolOptions.Refresh.
	Models []string
	// Slots is how many requests the host serves at once (its OLLAMA_NUM_PARALLEL); less
	// than 1 counts as 1. More are held in the daemon's queue, not the server's.
	Slots int
}

// PoolOptions configure NewPool.
type PoolOptions struct {
	Hosts []HostConfig
	// HTTP sends every request; nil means a client without a timeout (bound calls with
	// their context).
	HTTP *http.Client
	// Backoff spaces the probes of a down host; the zero value means 500ms doubling to 15s.
	Backoff backoff.Policy
	// Refresh is how often the models of a host that is up are re-read; 0 means a minute.
	Refresh time.Duration
	// CheckTimeout bounds one health probe (/api/tags); 0 means 3s.
	CheckTimeout time.Duration
	Log          *slog.Logger
}

// defaultPoolBackoff retries a down host soon (a restarted Ollama answers within seconds)
// but no more often than every 15s once it stays down.
var defaultPoolBackoff = backoff.Policy{Base: 500 * time.Millisecond, Max: 15 * time.Second, Jitter: 0.2}

// Pool routes calls over its hosts; a Client made by NewPool holds one. It is safe for
// concurrent use.
type Pool struct {
	opt   PoolOptions
	hosts []*poolHost
	log   *slog.Logger

	// mu guards every host's mutable fields, the queue and the queue's statistics. It is
	// never held across a request.
	mu     sync.Mutex
	queue  fairQueue
	stats  [numClasses]classStats
	onWait func(Class, time.Duration)

	// watches are the callers waiting for a host to serve their model (pool_wake.go).
	watches map[*servableWatch]bool
	// lastRound is when the prober last looked at the hosts: a model's time off a host
	// that ended since wakes the callers waiting for it.
	lastRound time.Time

	wake   chan struct{} // asks the prober to look at the hosts now
	cancel context.CancelFunc
	done   chan struct{} // closed when the prober has returned
}

// poolHost is one server of the pool and what the pool knows of it.
type poolHost struct {
	c     *Client
	slots int
	fixed map[string]bool // HostConfig.Models, normalized; nil: learn from /api/tags

	// Guarded by Pool.mu.
	up       bool
	models   map[string]bool // from /api/tags; nil until the host first answers
	missing  map[string]bool // models a call found missing (404) before the first /api/tags
	busy     int             // requests in flight
	served   int64           // calls answered
	failures int             // probes failed in a row while down
	retryAt  time.Time       // when a down host is probed next
	checked  time.Time       // the last probe or call that told up from down
	listed   time.Time       // the last good /api/tags: an up host is listed again Refresh later
	lastErr  error
	troubled map[string]*hostModel // model key → its failures here (pool_errors.go)
}

// NewPool returns a Client that routes every call over the hosts of opt, and starts the
// prober that watches them; Close stops it.
func NewPool(opt PoolOptions) (*Client, error) {
	if len(opt.Hosts) == 0 {
		return nil, errors.New("ollama pool: no hosts: give at least one")
	}
	if opt.HTTP == nil {
		opt.HTTP = &http.Client{}
	}
	if opt.Backoff.Base <= 0 {
		opt.Backoff = defaultPoolBackoff
	}
	if opt.Refresh <= 0 {
		opt.Refresh = time.Minute
	}
	if opt.CheckTimeout <= 0 {
		opt.CheckTimeout = 3 * time.Second
	}
	p := &Pool{opt: opt, log: opt.Log, wake: make(chan struct{}, 1), done: make(chan struct{})}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	seen := map[string]bool{}
	for _, hc := range opt.Hosts {
		c, err := New(hc.URL, opt.HTTP)
		if err != nil {
			return nil, err
		}
		if seen[c.Host()] {
			return nil, fmt.Errorf("ollama pool: host %s is listed twice: list each server once and give it more slots instead", c.Host())
		}
		seen[c.Host()] = true
		h := &poolHost{c: c, slots: max(1, hc.Slots), up: true}
		if len(hc.Models) > 0 {
			h.fixed = map[string]bool{}
			for _, m := range hc.Models {
				h.fixed[modelKey(m)] = true
			}
		}
		p.hosts = append(p.hosts, h)
	}
	front := &Client{host: p.hosts[0].c.host, api: p.hosts[0].c.api, hc: opt.HTTP, pool: p}
	ctx, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	go p.probeLoop(ctx)
	return front, nil
}

// Close stops the prober of a pool; calls in flight go on. It does nothing on a client
// made by New.
func (c *Client) Close() {
	if c.pool != nil {
		c.pool.cancel()
		<-c.pool.done
	}
}

// Pool returns the pool a NewPool client routes through, or nil for a client made by New.
func (c *Client) Pool() *Pool { return c.pool }

// modelKey is how /api/tags names a model: "llama3.2" is "llama3.2:latest".
func modelKey(m string) string {
	m = strings.ToLower(strings.TrimSpace(m))
	if m != "" && !strings.Contains(m[strings.LastIndex(m, "/")+1:], ":") {
		m += ":latest"
	}
	return m
}

// knows reports whether h is known, or assumed, to have model: one of its configured list
// (when it has one) that its /api/tags lists, or yes before it first answered. A model a
// call found missing (404) is not known until the next /api/tags lists it.
func (h *poolHost) knows(model string) bool {
	key := modelKey(model)
	if h.fixed != nil && !h.fixed[key] {
		return false
	}
	return h.models == nil && !h.missing[key] || h.models[key]
}

// candidates are the hosts up that may serve model, leaving out skip and the hosts model
// failed on lately (markModelTrouble). When no host is
// known to have it, hosts without a configured list are tried anyway, so a model pulled
// since the last /api/tags works and a missing one gets the server's own "not found".
// Caller holds p.mu.
func (p *Pool) candidates(model string, skip map[*poolHost]bool) []*poolHost {
	var known, maybe []*poolHost
	now := time.Now()
	for _, h := range p.hosts {
		switch {
		case !h.up || skip[h] || h.troubledNow(model, now):
		case h.knows(model):
			known = append(known, h)
		case h.fixed == nil:
			maybe = append(maybe, h)
		}
	}
	if len(known) > 0 {
		return known
	}
	return maybe
}

// pick returns the candidate with a free slot and the fewest requests in flight (the
// larger host first on a tie), or nil when all are full. Caller holds p.mu.
func pick(hosts []*poolHost) *poolHost {
	var best *poolHost
	for _, h := range hosts {
		if h.busy >= h.slots {
			continue
		}
		if best == nil || h.busy < best.busy || (h.busy == best.busy && h.slots-h.busy > best.slots-best.busy) {
			best = h
		}
	}
	return best
}

// noHostError says why no host can take a call for model. Caller holds p.mu.
func (p *Pool) noHostError(op, model string) error {
	var down []string
	var soonest time.Time
	for _, h := range p.hosts {
		if !h.up {
			why := ""
			if h.lastErr != nil {
				why = ": " + describe(errors.Unwrap(h.lastErr))
			}
			down = append(down, h.c.host+why)
			if soonest.IsZero() || h.retryAt.Before(soonest) {
				soonest = h.retryAt
			}
		}
	}
	msg := fmt.Sprintf("no Ollama host has model %q: pull it on one (`ollama pull %s`) or list it in [[ollama.hosts]] models", model, model)
	if note := p.troubleNote(model); note != "" {
		msg = fmt.Sprintf("no Ollama host can run model %q now: %s. Look at that server's log (a model too big for its memory is a common cause), or pull the model on another host", model, note)
	} else if len(down) > 0 {
		msg = fmt.Sprintf("no Ollama host that can serve %q is up (down: %s; next try in %s): start Ollama there (`ollama serve`) or add a host in [[ollama.hosts]]",
			model, strings.Join(down, "; "), max(0, time.Until(soonest)).Round(100*time.Millisecond))
	}
	return &UnavailableError{Host: p.hostList(), Op: op, Err: errors.New(msg)}
}

func (p *Pool) hostList() string {
	names := make([]string, len(p.hosts))
	for i, h := range p.hosts {
		names[i] = h.c.host
	}
	return strings.Join(names, ", ")
}

// direct picks a host for a call that does not queue (probes, embeddings): the least
// busy candidate, full or not.
func (p *Pool) direct(op, model string, skip map[*poolHost]bool) (*poolHost, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	hs := p.candidates(model, skip)
	if len(hs) == 0 {
		return nil, p.noHostError(op, model)
	}
	best := hs[0]
	for _, h := range hs[1:] {
		if h.busy < best.busy {
			best = h
		}
	}
	return best, nil
}

// markDown takes h out of routing until a probe finds it back. Caller holds p.mu.
func (p *Pool) markDown(h *poolHost, err error) {
	h.lastErr, h.checked = err, time.Now()
	if !h.up {
		return // already down: the prober owns its retries
	}
	h.up, h.failures = false, 1
	h.retryAt = time.Now().Add(p.opt.Backoff.Next(1))
	p.log.Warn("ollama host down: "+p.meanwhile("its calls"), "host", h.c.host, "err", err)
	p.failUnservable()
	p.poke()
}

// meanwhile says where calls go while a host cannot take them: to the other hosts, or,
// with one host, nowhere: agents wait for the model (waiting_for_model) while it is
// probed again with backoff.
func (p *Pool) meanwhile(calls string) string {
	if len(p.hosts) > 1 {
		return calls + " go to the other hosts"
	}
	return calls + " wait for it (agents show waiting_for_model); it is tried again with backoff"
}

// poke wakes the prober.
func (p *Pool) poke() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// withHost runs f against hosts for model until one answers or none is left: a host that
// fails is marked as pool_errors.go says and the next one tried. Probes and embeddings go
// this way.
func withHost[T any](ctx context.Context, p *Pool, op, model string, f func(*Client) (T, error)) (T, error) {
	skip := map[*poolHost]bool{}
	var zero T
	var last error
	_, caller := PriorityOf(ctx)
	se := serverErrors{p: p, model: model, caller: caller}
	for {
		h, err := p.direct(op, model, skip)
		if err != nil {
			se.end()
			if last != nil {
				return zero, last
			}
			return zero, err
		}
		p.mu.Lock()
		h.busy++
		p.mu.Unlock()
		v, err := f(h.c)
		p.mu.Lock()
		h.busy--
		if err == nil {
			h.checked = time.Now()
			if op != "show" { // /api/show reads the manifest: it says nothing of loading
				h.modelOK(model)
			}
		} else {
			p.failed(ctx, h, model, err)
		}
		p.dispatch()
		p.mu.Unlock()
		if !se.after(h, failureOf(ctx, err), err) {
			return v, err
		}
		skip[h], last = true, err
	}
}

// chat sends req through the queue to a host, and on to another when that one fails.
func (p *Pool) chat(ctx context.Context, req ChatRequest) (*ChatResult, error) {
	class, key := PriorityOf(ctx)
	skip := map[*poolHost]bool{}
	var last error
	se := serverErrors{p: p, model: req.Model, caller: key}
	for retry := false; ; retry = true {
		h, err := p.acquire(ctx, req.Model, class, key, skip, retry)
		if err != nil {
			if last != nil && ctx.Err() == nil {
				se.end()
				return nil, last
			}
			return nil, err
		}
		res, err := h.c.Chat(ctx, req)
		p.release(ctx, h, req.Model, err)
		if !se.after(h, failureOf(ctx, err), err) {
			return res, err
		}
		skip[h], last = true, err
	}
}

// release gives h's slot back and hands it to the next call in the queue.
func (p *Pool) release(ctx context.Context, h *poolHost, model string, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	h.busy--
	if err == nil {
		h.served++
		h.checked = time.Now()
		h.modelOK(model)
	} else {
		p.failed(ctx, h, model, err)
	}
	p.dispatch()
}

// probeLoop probes down hosts when their backoff is over, and re-reads the models of the
// hosts that are up every Refresh. The first round is at once.
func (p *Pool) probeLoop(ctx context.Context) {
	defer close(p.done)
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		case <-p.wake:
		}
		now := time.Now()
		next := now.Add(p.opt.Refresh)
		var due []*poolHost
		p.mu.Lock()
		for _, h := range p.hosts {
			at := h.listed.Add(p.opt.Refresh) // at once when never listed
			if !h.up {
				at = h.retryAt
			}
			if !at.After(now) {
				due = append(due, h)
				at = now.Add(p.opt.Refresh)
			}
			if at.Before(next) {
				next = at
			}
		}
		// A model kept off a host may go there again: the queue may have calls for it,
		// and callers may wait for it.
		if at := p.troubleDue(); at.After(now) && at.Before(next) {
			next = at
		}
		last := p.lastRound
		p.lastRound = now
		p.wakeServable(func(model string) bool { return p.troubleEnded(model, last, now) })
		p.dispatch()
		p.mu.Unlock()
		var wg sync.WaitGroup
		for _, h := range due {
			wg.Go(func() { p.check(ctx, h) })
		}
		wg.Wait()
		if len(due) > 0 {
			next = now // the round changed retryAt: look again
		}
		timer.Reset(max(0, time.Until(next)))
	}
}

// check asks h for its models: an answer brings it (back) up, a failure keeps it down
// and spaces the next probe further.
func (p *Pool) check(ctx context.Context, h *poolHost) {
	cctx, cancel := context.WithTimeout(ctx, p.opt.CheckTimeout)
	list, err := h.c.api.List(cctx)
	timedOut := errors.Is(cctx.Err(), context.DeadlineExceeded)
	cancel()
	if ctx.Err() != nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	h.checked = time.Now()
	if err != nil {
		// Classified against the prober's own context, which is live: the probe's
		// deadline is the host's silence, and the cause (refused, DNS) is in err.
		if timedOut {
			err = fmt.Errorf("no answer within %s", p.opt.CheckTimeout)
		}
		err = h.c.classify(ctx, "tags", "", err)
		if h.up {
			p.markDown(h, err)
			return
		}
		h.failures++
		h.lastErr = err
		h.retryAt = time.Now().Add(p.opt.Backoff.Next(h.failures))
		return
	}
	models := map[string]bool{}
	for _, m := range list.Models {
		models[modelKey(m.Name)] = true
		models[modelKey(m.Model)] = true
	}
	wasUp, had := h.up, h.models
	h.models, h.missing, h.listed = models, nil, time.Now()
	if !h.up {
		p.log.Info("ollama host back up: it takes calls again", "host", h.c.host, "down_probes", h.failures)
	}
	h.up, h.failures, h.lastErr = true, 0, nil
	p.wakeServable(func(model string) bool { return !wasUp || !had[modelKey(model)] })
	p.dispatch()
}

// Recheck probes now every host of the pool last heard from more than maxAge ago (a
// probe or a call) and returns once each answered or failed, so that status asked for
// says what is true now; a host found back wakes its callers as the prober's would. A
// client made by New has no hosts to recheck.
func (c *Client) Recheck(ctx context.Context, maxAge time.Duration) {
	p := c.pool
	if p == nil {
		return
	}
	var due []*poolHost
	p.mu.Lock()
	for _, h := range p.hosts {
		if time.Since(h.checked) > maxAge {
			due = append(due, h)
		}
	}
	p.mu.Unlock()
	var wg sync.WaitGroup
	for _, h := range due {
		wg.Go(func() { p.check(ctx, h) })
	}
	wg.Wait()
}

// HostStatus is one host of a pool as status, doctor and metrics show it.
type HostStatus struct {
	URL    string
	Up     bool
	Slots  int
	Busy   int      // requests in flight
	Served int64    // calls answered since the daemon started
	Models []string // the configured list, else the ones /api/tags listed (sorted)
	// Configured is true when Models comes from the config, not the server.
	Configured bool
	Checked    time.Time // the last probe or call that told up from down
	RetryIn    time.Duration
	Error      string // why it is down
	// Failing are the models it cannot run now (HTTP 500), kept off it for a backoff.
	Failing []ModelFailing
}

// PoolStatus is a pool at one moment.
type PoolStatus struct {
	Hosts []HostStatus
	Queue []ClassStatus // one per class: interactive, batch
}

// Status returns the pool's hosts and queue now.
func (p *Pool) Status() PoolStatus {
	p.mu.Lock()
	defer p.mu.Unlock()
	var st PoolStatus
	for _, h := range p.hosts {
		hs := HostStatus{URL: h.c.host, Up: h.up, Slots: h.slots, Busy: h.busy, Served: h.served, Checked: h.checked,
			Configured: h.fixed != nil}
		src := h.models
		if h.fixed != nil {
			src = h.fixed
		}
		for m := range src {
			hs.Models = append(hs.Models, m)
		}
		slices.Sort(hs.Models)
		hs.Failing = h.failing(time.Now())
		if !h.up {
			hs.RetryIn = max(0, time.Until(h.retryAt))
			if h.lastErr != nil {
				hs.Error = h.lastErr.Error()
			}
		}
		st.Hosts = append(st.Hosts, hs)
	}
	for c := range Class(numClasses) {
		st.Queue = append(st.Queue, p.stats[c].status(c, p.queue.len(c)))
	}
	return st
}

// PoolStatus is the client's pool now; nil for a client made by New.
func (c *Client) PoolStatus() *PoolStatus {
	if c.pool == nil {
		return nil
	}
	st := c.pool.Status()
	return &st
}
