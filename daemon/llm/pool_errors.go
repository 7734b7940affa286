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
//     this model ("model requires more system memory (…) than is available", a broken
//     manifest), but also for one request it cannot serve ("llama runner process has
//     terminated" on this prompt, a chat template error). The host serves other models,
//     so it stays up. The call goes on to one more host at most (serverErrors): when that
//     one serves it, this model is kept off the first for a backoff (hostModel.until);
//     when it fails the same way, the request is at fault and the call fails. Without
//     another host to ask, the model is kept off a host once calls of two different
//     callers failed there in a row: a model that cannot load fails everyone's calls, a
//     poisoned request only its own caller's, who backs off alone.
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
	until time.Time // no call for the model goes to the host before; zero: not kept off
	fails int       // times kept off in a row, for the backoff
	err   error
	// callers are those whose calls failed with a server error here since the model was
	// last served (serverError); "" stands for calls without a caller (probes, embeddings).
	callers map[string]bool
}

// failed records how a call to h for model ended (err not nil), but for a server error,
// which the call's serverErrors weighs. Caller holds p.mu.
func (p *Pool) failed(ctx context.Context, h *poolHost, model string, err error) {
	switch failureOf(ctx, err) {
	case failureHostDown:
		p.markDown(h, err)
	case failureModelMissing:
		if h.models != nil {
			delete(h.models, modelKey(model))
		} else { // before the host's first listing: remembered until it comes
			if h.missing == nil {
				h.missing = map[string]bool{}
			}
			h.missing[modelKey(model)] = true
		}
		p.failUnservable()
	}
}

// serverErrors follows one call over the hosts it tries, to tell whose fault a server
// error (failureModelTrouble) was; see the top of this file.
type serverErrors struct {
	p      *Pool
	model  string
	caller string
	first  *poolHost // the host that answered the call with a server error first
	err    error
}

// after takes the outcome of the call on h (f, err) and reports whether the call may go
// on to another host.
func (s *serverErrors) after(h *poolHost, f failure, err error) bool {
	s.p.mu.Lock()
	defer s.p.mu.Unlock()
	switch {
	case f == failureModelTrouble && s.first != nil:
		// A second host failed the same call the same way: the request is at fault.
		s.p.serverError(s.first, s.model, s.caller, s.err)
		s.p.serverError(h, s.model, s.caller, err)
		s.first = nil
		return false
	case f == failureModelTrouble:
		s.first, s.err = h, err
	case f == failureNone && s.first != nil:
		s.p.markModelTrouble(s.first, s.model, s.err) // another host served this very call
		s.first = nil
	}
	return f.elsewhere()
}

// end is told that no other host was left to ask.
func (s *serverErrors) end() {
	if s.first == nil {
		return
	}
	s.p.mu.Lock()
	s.p.serverError(s.first, s.model, s.caller, s.err)
	s.p.mu.Unlock()
}

// serverError records that a call of caller for model failed on h with a server error no
// other host's answer explained. The model is kept off h once calls of two different
// callers failed so in a row, or at once when it was kept off already (its backoff grows).
// Caller holds p.mu.
func (p *Pool) serverError(h *poolHost, model, caller string, err error) {
	hm := h.trouble(model)
	if hm.callers == nil {
		hm.callers = map[string]bool{}
	}
	hm.callers[caller] = true
	hm.err = err
	if len(hm.callers) >= 2 || hm.fails > 0 {
		p.markModelTrouble(h, model, err)
	}
}

// trouble returns h's record of model's failures, made when there is none. Caller holds
// p.mu.
func (h *poolHost) trouble(model string) *hostModel {
	if h.troubled == nil {
		h.troubled = map[string]*hostModel{}
	}
	key := modelKey(model)
	hm := h.troubled[key]
	if hm == nil {
		hm = &hostModel{}
		h.troubled[key] = hm
	}
	return hm
}

// markModelTrouble keeps model off h for a backoff, h serving its other models on. Caller
// holds p.mu.
func (p *Pool) markModelTrouble(h *poolHost, model string, err error) {
	hm := h.trouble(model)
	hm.callers = nil // after the backoff, one more failure keeps it off again
	hm.fails++
	hm.err = err
	hm.until = time.Now().Add(p.opt.Backoff.Next(hm.fails))
	p.log.Warn("ollama host cannot run a model now: "+p.meanwhile("its calls for it"), "host", h.c.host, "model", model,
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

// troubleDue is the soonest time after now that a model kept off a host may be tried
// there again; zero when none is kept off. Caller holds p.mu.
func (p *Pool) troubleDue() time.Time {
	var soonest time.Time
	now := time.Now()
	for _, h := range p.hosts {
		for _, hm := range h.troubled {
			if hm.until.After(now) && (soonest.IsZero() || hm.until.Before(soonest)) {
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
