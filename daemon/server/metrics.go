package server

import (
	"net/http"

	"github.com/agentd/agentd/daemon/agent"
	"github.com/agentd/agentd/daemon/llm"
	"github.com/agentd/agentd/daemon/metrics"
)

// newMetrics makes the daemon's metrics and has the model client report every chat
// call to them; the supervisor, the schedules and the bots get them as options.
func newMetrics(lc *llm.Client) *metrics.Metrics {
	m := metrics.New()
	lc.Observe(func(c llm.Call) { m.ModelCall(c.Model, c.Duration, c.PromptTokens, c.EvalTokens, c.Err) })
	return m
}

// metricsHandler serves the Prometheus exposition: the counters the daemon bumps and
// the gauges the supervisor reads from the store at scrape time. The [http] listener
// mounts it at /metrics behind the bearer token (it names the agents); the unix socket
// serves it at /v0/metrics.
func metricsHandler(m *metrics.Metrics, sup *agent.Supervisor) http.Handler {
	m.SetState(sup.API().Views.MetricsState)
	return m.Handler()
}
