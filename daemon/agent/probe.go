package agent

import (
	"context"
	"fmt"
	"time"

	"github.com/agentd/agentd/daemon/llm"
)

// probeLoop probes the model server until it answers, then again every minute so that
// status stays true and a model pulled later is noticed. After a failed probe it waits
// with backoff, or until the pool finds a host that serves the model back.
func (s *Supervisor) probeLoop(ctx context.Context) {
	s.model.mu.Lock()
	s.model.host = s.opt.LLM.Host()
	s.model.mu.Unlock()
	attempt := 0
	for {
		model := s.live().Model
		// Watched from before the probe: a host back while it fails is not missed.
		back, stop := s.opt.LLM.Servable(model)
		pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		info, err := s.opt.LLM.Probe(pctx, model)
		cancel()
		wait := time.Minute
		if err != nil {
			s.model.failed(err) // the last good probe stays: the model's limits do not change when it is away
			attempt++
			wait = s.opt.Backoff(attempt)
		} else {
			s.model.probedOK(model, info)
			attempt = 0
			back = nil // it answered: nothing to wait for
		}
		if err != nil && ctx.Err() == nil {
			s.log.Warn("model probe failed", "model", model, "err", err)
		} else if err == nil && attempt == 0 {
			s.log.Debug("model probed", "model", model, "version", info.ServerVersion, "context", info.ContextLength)
		}
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		case <-back:
			attempt = 0
		case <-s.reprobe: // a reload changed the model
			attempt = 0
		}
		stop()
		if ctx.Err() != nil {
			return
		}
	}
}

// freshen asks the model server (every host of a pool) again when the last answer is
// older than maxAge, and records what it says.
func (s *Supervisor) freshen(ctx context.Context, maxAge time.Duration) {
	m := &s.model
	m.asking.Lock()
	defer m.asking.Unlock()
	m.mu.Lock()
	age := time.Since(m.checked)
	m.mu.Unlock()
	if age <= maxAge {
		return
	}
	s.opt.LLM.Recheck(ctx, maxAge) // bounded by the pool's own probe timeout
	model := s.live().Model
	pctx, cancel := context.WithTimeout(ctx, statusProbeTimeout)
	defer cancel()
	info, err := s.opt.LLM.Probe(pctx, model)
	switch {
	case err == nil:
		m.probedOK(model, info)
	case ctx.Err() != nil: // the asker left: nothing learned
	case pctx.Err() != nil:
		m.failed(&llm.UnavailableError{Host: s.opt.LLM.Host(), Op: "version", Err: fmt.Errorf("no answer within %s", statusProbeTimeout)})
	default:
		m.failed(err)
	}
}

func (s *Supervisor) now() time.Time {
	if s.opt.Now != nil {
		return s.opt.Now()
	}
	return time.Now()
}
