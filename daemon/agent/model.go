package agent

import (
	"errors"
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

// statusFresh is how old the daemon's last word from the model server may be when status
// is asked; an older one is asked again first, so status never calls reachable a server
// that died since. statusProbeTimeout bounds that probe.
const (
	statusFresh        = 2 * time.Second
	statusProbeTimeout = 3 * time.Second
)
