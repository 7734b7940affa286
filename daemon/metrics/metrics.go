// Package metrics is agentd's Prometheus instrumentation: counters the agent cycle, the
// model client, the chat bots and the scheduler bump as things happen, and gauges read
// from the store at scrape time (agents by state, decisions pending, memory size, token
// totals), so a gauge can never drift from the source of truth.
//
// Everything lives on the Metrics value's own registry, never the global one, so two
// daemons in one test process do not share numbers. The daemon's optional loopback
// listener serves Handler at /metrics. Labels are bounded: outcome, source, model,
// platform, and agent or schedule names only on the store-read totals, capped at
// MaxNamedSeries names each.
package metrics

import (
	"context"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// MaxNamedSeries caps the agents (and schedules) that get their own token series; the
// ones with the most tokens are kept, so a daemon with thousands of template agents
// does not swamp the scraper.
const MaxNamedSeries = 100

// Metrics holds agentd's collectors. Its methods are safe for concurrent use and do
// nothing on a nil *Metrics, so callers need no checks when metrics are off.
type Metrics struct {
	reg *prometheus.Registry

	steps        *prometheus.CounterVec
	modelSeconds *prometheus.HistogramVec
	modelTokens  *prometheus.CounterVec
	commandSecs  *prometheus.HistogramVec
	decisions    *prometheus.CounterVec
	bots         *prometheus.GaugeVec
	scheduleRuns *prometheus.CounterVec
	budgets      *prometheus.CounterVec
	loops        *prometheus.CounterVec
	state        *stateCollector
	queueWait    *prometheus.HistogramVec
	pool         *poolCollector
}

// New returns Metrics with the Go runtime and process collectors registered.
func New() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		steps: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agentd_steps_total",
			Help: "Agent steps that ended, by outcome (succeeded, failed, denied, feedback).",
		}, []string{"outcome"}),
		modelSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "agentd_model_call_duration_seconds",
			Help: "Wall time of /api/chat calls to the model server, by model and result (ok, error).",
			// From a tiny model on loopback (tens of ms) to a big one on CPU (minutes).
			Buckets: []float64{.025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300},
		}, []string{"model", "result"}),
		commandSecs: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "agentd_command_duration_seconds",
			Help: "Wall time of the commands agents ran, by command and outcome (succeeded, failed).",
			// From a file write (a millisecond) to a long build in the sandbox (its timeout).
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 10, 30, 60, 300, 600},
		}, []string{"command", "outcome"}),
		modelTokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agentd_model_tokens_total",
			Help: "Tokens the model server reported, by model and kind (prompt, eval).",
		}, []string{"model", "kind"}),
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agentd_decisions_total",
			Help: "Decisions on proposals, by outcome (approved, denied, feedback, auto, expired) and source (cli, slack, discord, auto, policy, other).",
		}, []string{"outcome", "source"}),
		bots: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "agentd_bot_connected",
			Help: "1 while the chat bot's connection to its platform is up, else 0.",
		}, []string{"platform"}),
		scheduleRuns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agentd_schedule_runs_total",
			Help: "Schedule firings by result: skipped, missed, nothing_to_do (the wake check found nothing; no model call), check_failed (the wake check could not run), failed (to start), or how the run ended (finished, denied, stopped, budget_exhausted, removed).",
		}, []string{"result"}),
		budgets: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agentd_budget_exhausted_total",
			Help: "Runs and agents stopped by a budget, by scope (run, agent) and budget (steps, tokens, time).",
		}, []string{"scope", "budget"}),
		loops: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agentd_watchdog_loops_total",
			Help: "Loops the watchdog caught, by kind (repeat, cycle, failing, no_progress, undo, invalid_replies) and action (rethink: the smart model thinks again; ask: a person is asked; stop: a schedule's run is stopped; pause: the agent pauses).",
		}, []string{"kind", "action"}),
		state:     &stateCollector{},
		queueWait: newQueueWait(),
		pool:      &poolCollector{},
	}
	m.reg.MustRegister(m.steps, m.modelSeconds, m.commandSecs, m.modelTokens, m.decisions, m.bots, m.scheduleRuns, m.budgets, m.loops, m.state,
		m.queueWait, m.pool,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Registry returns the registry the metrics live on (tests gather from it).
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the metrics in the Prometheus exposition format. A nil *Metrics
// answers 404, so a listener can mount it unconditionally.
func (m *Metrics) Handler() http.Handler {
	if m == nil {
		return http.NotFoundHandler()
	}
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// Step counts a step that ended with outcome (an episode's outcome).
func (m *Metrics) Step(outcome string) {
	if m != nil {
		m.steps.WithLabelValues(outcome).Inc()
	}
}

// ModelCall records one chat call: its latency, and the tokens the server reported.
func (m *Metrics) ModelCall(model string, d time.Duration, promptTokens, evalTokens int, err error) {
	if m == nil {
		return
	}
	result := "ok"
	if err != nil {
		result = "error"
	}
	m.modelSeconds.WithLabelValues(model, result).Observe(d.Seconds())
	if promptTokens > 0 {
		m.modelTokens.WithLabelValues(model, "prompt").Add(float64(promptTokens))
	}
	if evalTokens > 0 {
		m.modelTokens.WithLabelValues(model, "eval").Add(float64(evalTokens))
	}
}

// Command records how long one command ran and how it ended (succeeded, failed). The
// command names are bounded: the built-in commands and the configured MCP tools.
func (m *Metrics) Command(name, outcome string, d time.Duration) {
	if m != nil {
		m.commandSecs.WithLabelValues(name, outcome).Observe(d.Seconds())
	}
}

// Decision counts a decision of kind (approve, deny, feedback) from source, as
// client.Decision has them; by tells the policy's auto-mode approvals from its pattern
// ones.
func (m *Metrics) Decision(kind, source, by string) {
	if m != nil {
		outcome, src := DecisionLabels(kind, source, by)
		m.decisions.WithLabelValues(outcome, src).Inc()
	}
}

// DecisionExpired counts a proposal that could no longer be decided from platform's
// chat because it expired there.
func (m *Metrics) DecisionExpired(platform string) {
	if m != nil {
		m.decisions.WithLabelValues("expired", sourceLabel(platform)).Inc()
	}
}

// DecisionLabels maps a decision to its outcome and source labels. Approvals no person
// made this time — continuous mode's, and a grant's (y -N, y!, a pattern grant, a
// schedule's autonomy) — are outcome and source "auto"; pattern decisions keep their
// kind with source "policy".
func DecisionLabels(kind, source, by string) (outcome, src string) {
	outcome = map[string]string{"approve": "approved", "deny": "denied", "feedback": "feedback"}[kind]
	if outcome == "" {
		outcome = "other"
	}
	src = sourceLabel(source)
	if kind == "approve" && (source == "grant" || source == "policy" && (by == "auto" || by == "continuous")) {
		outcome, src = "auto", "auto"
	}
	return outcome, src
}

// sourceLabel bounds the source label: anything unknown is "other".
func sourceLabel(s string) string {
	switch s {
	case "agentctl", "api", "cli", "":
		return "cli"
	case "slack", "discord", "policy", "auto":
		return s
	}
	return "other"
}

// SetBotConnected records whether platform's chat bot is connected. The bots call it
// on every connect and disconnect.
func (m *Metrics) SetBotConnected(platform string, up bool) {
	if m == nil {
		return
	}
	v := 0.0
	if up {
		v = 1
	}
	m.bots.WithLabelValues(platform).Set(v)
}

// ScheduleRun counts a schedule firing that ended with result.
func (m *Metrics) ScheduleRun(result string) {
	if m != nil {
		m.scheduleRuns.WithLabelValues(result).Inc()
	}
}

// BudgetExhausted counts a stop by a budget: scope is run or agent, budget is steps,
// tokens or time.
func (m *Metrics) BudgetExhausted(scope, budget string) {
	if m != nil {
		m.budgets.WithLabelValues(scope, budget).Inc()
	}
}

// Loop counts a loop the watchdog caught: kind is the loop's (watchdog.Kind), action
// what followed (rethink or ask).
func (m *Metrics) Loop(kind, action string) {
	if m != nil {
		m.loops.WithLabelValues(kind, action).Inc()
	}
}

// State is what the store says at scrape time.
type State struct {
	// AgentsByState counts agents by state; states with none may be left out.
	AgentsByState map[string]int
	// DecisionsPending counts proposals waiting for a person's decision.
	DecisionsPending int
	// MemoryDocuments is the memory index's document count; -1 when there is no index.
	MemoryDocuments int
	// AgentTokens are each agent's lifetime token totals.
	AgentTokens []AgentTokens
	// ScheduleTokens are each schedule's token total over its ended runs.
	ScheduleTokens []ScheduleTokens
}

// AgentTokens is one agent's lifetime token totals.
type AgentTokens struct {
	Agent                    string
	PromptTokens, EvalTokens int64
}

// ScheduleTokens is one schedule's token total over its ended runs (the store keeps
// one total per run).
type ScheduleTokens struct {
	Schedule string
	Tokens   int64
}

// AgentStates are the states every scrape reports, zero or not, so a series does not
// disappear when its last agent leaves the state.
var AgentStates = []string{"thinking", "awaiting_decision", "executing", "waiting_for_model", "paused", "idle", "failed"}

// SetState sets the function a scrape reads the store-backed gauges from. Until it is
// set, or when it fails, those gauges are left out of the scrape.
func (m *Metrics) SetState(f func(ctx context.Context) (State, error)) {
	if m != nil {
		m.state.f.Store(&f)
	}
}
