package server

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/agentd/agentd/daemon/agent"
	"github.com/agentd/agentd/daemon/config"
	"github.com/agentd/agentd/daemon/llm"
	"github.com/agentd/agentd/daemon/metrics"
)

// newMetrics makes the daemon's metrics and has the model client report every chat
// call to them; the supervisor, the schedules and the bots get them as options.
func newMetrics(lc *llm.Client) *metrics.Metrics {
	m := metrics.New()
	lc.Observe(func(c llm.Call) { m.ModelCall(c.Model, c.Duration, c.PromptTokens, c.EvalTokens, c.Err) })
	if p := lc.Pool(); p != nil {
		p.ObserveQueue(func(c llm.Class, d time.Duration) { m.QueueWait(c.String(), d) })
		m.SetPool(func() ([]metrics.PoolHost, []metrics.PoolQueue) { return poolMetrics(p.Status()) })
	}
	return m
}

// poolMetrics converts the model pool's status for a scrape.
func poolMetrics(st llm.PoolStatus) ([]metrics.PoolHost, []metrics.PoolQueue) {
	hosts := make([]metrics.PoolHost, len(st.Hosts))
	for i, h := range st.Hosts {
		hosts[i] = metrics.PoolHost{URL: h.URL, Up: h.Up, Slots: h.Slots, Busy: h.Busy, Models: len(h.Models), Served: h.Served,
			Failing: len(h.Failing)}
	}
	queue := make([]metrics.PoolQueue, len(st.Queue))
	for i, q := range st.Queue {
		queue[i] = metrics.PoolQueue{Class: q.Class, Queued: q.Queued}
	}
	return hosts, queue
}

// metricsHandler serves the Prometheus exposition: the counters the daemon bumps and
// the gauges the supervisor reads from the store at scrape time. The [http] listener
// mounts it at /metrics behind the bearer token (it names the agents); the unix socket
// serves it at /v0/metrics.
func metricsHandler(m *metrics.Metrics, sup *agent.Supervisor) http.Handler {
	m.SetState(sup.API().Views.MetricsState)
	return m.Handler()
}

// poolOptions are the model pool's hosts from the config, [[ollama.hosts]]
// (one by default: $OLLAMA_HOST or the default address).
func poolOptions(cfg *config.Config, log *slog.Logger) llm.PoolOptions {
	opt := llm.PoolOptions{HTTP: &http.Client{Timeout: cfg.Ollama.RequestTimeout.Duration}, Log: log}
	for _, h := range cfg.Ollama.PoolHosts() {
		opt.Hosts = append(opt.Hosts, llm.HostConfig{URL: h.URL, Models: h.Models, Slots: h.Slots})
	}
	return opt
}
