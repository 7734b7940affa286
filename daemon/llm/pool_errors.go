package llm

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
)

// How a failed call to one host of a pool is taken, from what Ollama 0.17.4's /api/chat
// answers (server/routes.go ChatHandler, handleScheduleError):
//
//   - hostDown: no answer (connection refused or reset, a timeout, a reply cut off) or
//     502/503/504 (a proxy in front of a dead server, or Ollama's "server busy ...
//     maximum pending requests exceeded"). The host is marked down and probed with backoff.
//   - modelTrouble: 500 and the other 5xx. Ollama answers 500 when it cannot load or run
//     this model ("model requires more system memory (…) than is available", "llama
//     runner process has terminated", a broken manifest): the host serves other models,
//     so it stays up, and only this model is kept off it for a backoff (hostModel.until).
//   - modelMissing: 404 "model 'x' not found": this host's model list was stale; it is
//     dropped from the list until the next /api/tags.
//   - the request's fault: 400 (bad body, "does not support chat", the input exceeds the
//     context length) and other 4xx: the call fails at once, on no other host.
//
// In the first three cases the call goes on to another host that has the model.
type failure int

const (
	failureNone failure = iota
	failureHostDown
	failureModelTrouble
	failureModelMissing
	failureRequest
	failureBusy // 408, 429: this host is busy; another may take the call, and it stays up
)

// failureOf sorts err, the classified error of a call to one host.
func failureOf(ctx context.Context, err error) failure {
	if err == nil {
		return failureNone
	}
	if ctx.Err() != nil {
		return failureRequest // the caller gave up: nothing to learn about the host
	}
	var nf *ModelNotFoundError
	if errors.As(err, &nf) {
		return failureModelMissing
	}
	var ue *UnavailableError
	if !errors.As(err, &ue) {
		return failureRequest
	}
	switch ue.Status {
	case 0, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return failureHostDown
	case http.StatusRequestTimeout, http.StatusTooManyRequests:
		return failureBusy
	}
	return failureModelTrouble
}

// elsewhere reports whether a call that failed this way may go on to another host.
func (f failure) elsewhere() bool {
	return f == failureHostDown || f == failureModelTrouble || f == failureModelMissing || f == failureBusy
}

// hostModel is what a pool knows of one model on one host after it failed there.
// Guarded by Pool.mu.
type hostModel struct {
	until time.Time // no call for the model goes to the host before
	fails int       // failures in a row, for the backoff
	err   error
}

// failed records how a call to h for model ended (err not nil). Caller holds p.mu.
func (p *Pool) failed(ctx context.Context, h *poolHost, model string, err error) {
	switch failureOf(ctx, err) {
	case failureHostDown:
		p.markDown(h, err)
	case failureModelTrouble:
		p.markModelTrouble(h, model, err)
	case failureModelMissing:
		if h.models != nil {
			delete(h.models, modelKey(model))
			p.failUnservable()
		}
	}
}

// markModelTrouble keeps model off h for a backoff, h serving its other models on. Caller
// holds p.mu.
func (p *Pool) markModelTrouble(h *poolHost, model string, err error) {
	if h.troubled == nil {
		h.troubled = map[string]*hostModel{}
	}
	key := modelKey(model)
	hm := h.troubled[key]
	if hm == nil {
		hm = &hostModel{}
		h.troubled[key] = hm
	}
	hm.fails++
	hm.err = err
	hm.until = time.Now().Add(p.opt.Backoff.Next(hm.fails))
	p.log.Warn("ollama host cannot run a model now: its calls for it go to other hosts", "host", h.c.host, "model", model,
		"retry_in", time.Until(hm.until).Round(time.Millisecond), "err", err)
	p.failUnservable()
	p.poke() // the prober wakes the queue when the backoff is over
}

// modelOK forgets model's failures on h after a call for it succeeded. Caller holds p.mu.
func (h *poolHost) modelOK(model string) {
	if h.troubled != nil {
		delete(h.troubled, modelKey(model))
	}
}

// troubledNow reports whether model is kept off h now. Caller holds p.mu.
func (h *poolHost) troubledNow(model string, now time.Time) bool {
	hm := h.troubled[modelKey(model)]
	return hm != nil && now.Before(hm.until)
}

// troubleNote says which hosts cannot run model now and why, for noHostError; "" when none.
// Caller holds p.mu.
func (p *Pool) troubleNote(model string) string {
	now := time.Now()
	var parts []string
	for _, h := range p.hosts {
		if hm := h.troubled[modelKey(model)]; hm != nil && now.Before(hm.until) {
			parts = append(parts, fmt.Sprintf("%s failed it (%s; next try in %s)", h.c.host, describe(errors.Unwrap(hm.err)),
				hm.until.Sub(now).Round(100*time.Millisecond)))
		}
	}
	return strings.Join(parts, "; ")
}

// troubleDue is the soonest time a model kept off a host may be tried there again; zero
// when none is. Caller holds p.mu.
func (p *Pool) troubleDue() time.Time {
	var soonest time.Time
	for _, h := range p.hosts {
		for _, hm := range h.troubled {
			if soonest.IsZero() || hm.until.Before(soonest) {
				soonest = hm.until
			}
		}
	}
	return soonest
}

// ModelFailing is a model a host of a pool cannot run now, as status shows it.
type ModelFailing struct {
	Model   string
	RetryIn time.Duration // until calls for it go to the host again
	Error   string        // the host's answer
}

// failing lists the models kept off h at now, by name. Caller holds p.mu.
func (h *poolHost) failing(now time.Time) []ModelFailing {
	var out []ModelFailing
	for m, hm := range h.troubled {
		if now.Before(hm.until) {
			out = append(out, ModelFailing{Model: m, RetryIn: hm.until.Sub(now), Error: hm.err.Error()})
		}
	}
	slices.SortFunc(out, func(a, b ModelFailing) int { return strings.Compare(a.Model, b.Model) })
	return out
}
