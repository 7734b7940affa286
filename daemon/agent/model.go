package agent

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/daemon/llm"
)

// modelState is what the supervisor knows about the model server, shared by all agents.
type modelState struct {
	// pool reads the model client's pool for status (hosts, queue); nil in tests.
	pool    func() *llm.PoolStatus
	mu      sync.Mutex
	host    string
	model   string
	smart   string
	probed  *llm.ModelInfo
	lastErr error
	checked time.Time // when the server last answered or failed to: Reachable's age
	// asking is held while status asks the server again (freshen): one probe at a time,
	// the other askers wait for its answer.
	asking sync.Mutex
	// cpt is characters per token by model, calibrated from Ollama's prompt_eval_count:
	// tokenizers differ, so a smart model's ratio must not size the fast model's prompts.
	cpt map[string]float64
}

func (m *modelState) info() *llm.ModelInfo {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.probed
}

// probedOK records a probe of model; one of a model no longer in use (a reload changed
// it while the probe ran) is dropped.
func (m *modelState) probedOK(model string, info *llm.ModelInfo) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if model != m.model {
		return
	}
	m.probed, m.lastErr, m.checked = info, nil, time.Now()
}

// switchTo starts over for a new model: its context length is unknown until probed.
func (m *modelState) switchTo(model, smart string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if model != m.model {
		m.probed, m.lastErr = nil, nil
	}
	m.model, m.smart = model, smart
}

func (m *modelState) failed(err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.lastErr, m.checked = err, time.Now()
}

// defaultCharsPerToken is a cautious guess until the first reply calibrates it.
const defaultCharsPerToken = 3.0

// charsPerToken is the model's calibrated characters per token, or a cautious default.
func (m *modelState) charsPerToken(model string) float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if c := m.cpt[model]; c > 0 {
		return c
	}
	return defaultCharsPerToken
}

// calibrate updates the model's chars-per-token estimate from one call; it leans low
// (more tokens per char) so the prompt errs on the side of fitting.
func (m *modelState) calibrate(model string, chars, tokens int) {
	if tokens <= 0 || chars <= 0 {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.lastErr, m.checked = nil, time.Now() // a reply: the server is reachable now
	if m.cpt == nil {
		m.cpt = map[string]float64{}
	}
	obs := float64(chars) / float64(tokens) * 0.9
	if c := m.cpt[model]; c == 0 || obs < c {
		m.cpt[model] = obs
	} else {
		m.cpt[model] = 0.8*c + 0.2*obs
	}
}

func (m *modelState) status() api.OllamaStatus {
	m.mu.Lock()
	defer m.mu.Unlock()
	st := api.OllamaStatus{Host: m.host, Model: m.model, SmartModel: m.smart, CheckedAt: m.checked}
	if m.pool != nil {
		st.Hosts, st.Queue = poolStatus(m.pool())
	}
	if m.probed != nil {
		st.Reachable, st.ModelPresent = true, true
		st.Version = m.probed.ServerVersion
		st.ContextLength = m.probed.ContextLength
		st.Capabilities = m.probed.Capabilities
	}
	if m.lastErr != nil {
		st.Error = m.lastErr.Error()
		var nf *llm.ModelNotFoundError
		switch {
		case errors.As(m.lastErr, &nf):
			st.Reachable, st.ModelPresent = true, false
		case errors.Is(m.lastErr, llm.ErrUnavailable):
			st.Reachable = false
		}
	}
	return st
}

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

// statusFresh is how old the daemon's last word from the model server may be when status
// is asked; an older one is asked again first, so status never calls reachable a server
// that died since. statusProbeTimeout bounds that probe.
const (
	statusFresh        = 2 * time.Second
	statusProbeTimeout = 3 * time.Second
)

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
