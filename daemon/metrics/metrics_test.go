package metrics

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestNilMetricsDoNothing(t *testing.T) {
	var m *Metrics
	m.Step("succeeded")
	m.ModelCall("tiny", time.Second, 1, 2, nil)
	m.Decision("approve", "slack", "U1")
	m.DecisionExpired("slack")
	m.SetBotConnected("slack", true)
	m.ScheduleRun("finished")
	m.BudgetExhausted("agent", "tokens")
	m.Loop("cycle", "ask")
	m.SetState(nil)
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != http.StatusNotFound {
		t.Errorf("nil metrics handler = %d, want 404", rec.Code)
	}
}

func TestCountersAndGauges(t *testing.T) {
	m := New()
	m.SetBotConnected("slack", true)
	m.SetBotConnected("slack", false)
	m.SetBotConnected("discord", true)
	m.ScheduleRun("finished")
	m.ScheduleRun("finished")
	m.ScheduleRun("skipped")
	m.ModelCall("tiny", 30*time.Millisecond, 100, 20, nil)
	m.ModelCall("tiny", time.Second, 0, 0, errors.New("down"))
	m.DecisionExpired("slack")
	m.BudgetExhausted("agent", "tokens")
	m.Loop("cycle", "rethink")
	m.Loop("cycle", "ask")
	m.Loop("failing", "ask")
	for _, c := range []struct {
		got, want float64
		what      string
	}{
		{testutil.ToFloat64(m.bots.WithLabelValues("slack")), 0, "slack connected"},
		{testutil.ToFloat64(m.bots.WithLabelValues("discord")), 1, "discord connected"},
		{testutil.ToFloat64(m.scheduleRuns.WithLabelValues("finished")), 2, "finished schedule runs"},
		{testutil.ToFloat64(m.scheduleRuns.WithLabelValues("skipped")), 1, "skipped schedule runs"},
		{testutil.ToFloat64(m.loops.WithLabelValues("cycle", "ask")), 1, "cycles asked about"},
		{testutil.ToFloat64(m.loops.WithLabelValues("failing", "ask")), 1, "failing streaks asked about"},
		{testutil.ToFloat64(m.modelTokens.WithLabelValues("tiny", "prompt")), 100, "prompt tokens"},
		{testutil.ToFloat64(m.modelTokens.WithLabelValues("tiny", "eval")), 20, "eval tokens"},
		{testutil.ToFloat64(m.decisions.WithLabelValues("expired", "slack")), 1, "expired decisions"},
		{testutil.ToFloat64(m.budgets.WithLabelValues("agent", "tokens")), 1, "agent token budget stops"},
	} {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.what, c.got, c.want)
		}
	}
	if n := testutil.CollectAndCount(m.modelSeconds); n != 2 {
		t.Errorf("%d latency series, want 2 (ok and error)", n)
	}
}

func TestStateGaugesAndCap(t *testing.T) {
	m := New()
	st := State{AgentsByState: map[string]int{"idle": 2, "paused": 1}, DecisionsPending: 3, MemoryDocuments: 42}
	for i := range MaxNamedSeries + 5 {
		st.AgentTokens = append(st.AgentTokens, AgentTokens{Agent: "a" + strings.Repeat("x", i), PromptTokens: int64(i), EvalTokens: 1})
	}
	st.ScheduleTokens = []ScheduleTokens{{Schedule: "nightly", Tokens: 77}}
	m.SetState(func(context.Context) (State, error) { return st, nil })
	want := `
# HELP agentd_decisions_pending Proposals waiting for a person's decision.
# TYPE agentd_decisions_pending gauge
agentd_decisions_pending 3
# HELP agentd_memory_index_documents Documents in the long-term memory index.
# TYPE agentd_memory_index_documents gauge
agentd_memory_index_documents 42
# HELP agentd_schedule_tokens_total Model tokens a schedule's ended runs used; the schedules with the most tokens, at most 100.
# TYPE agentd_schedule_tokens_total counter
agentd_schedule_tokens_total{schedule="nightly"} 77
`
	if err := testutil.CollectAndCompare(m.state, strings.NewReader(want), "agentd_decisions_pending", "agentd_memory_index_documents", "agentd_schedule_tokens_total"); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(m.state, "agentd_agent_tokens_total"); n != 2*MaxNamedSeries {
		t.Errorf("%d agent token series, want %d (capped)", n, 2*MaxNamedSeries)
	}
	if n := testutil.CollectAndCount(m.state, "agentd_agents"); n != len(AgentStates) {
		t.Errorf("%d agent state series, want one per state (%d), zeros included", n, len(AgentStates))
	}
	m.SetState(func(context.Context) (State, error) { return State{}, errors.New("store locked") })
	if err := testutil.CollectAndCompare(m.state, strings.NewReader(`
# HELP agentd_state_scrape_error 1 when reading the store for this scrape failed (the store-backed gauges are then left out).
# TYPE agentd_state_scrape_error gauge
agentd_state_scrape_error 1
`)); err != nil {
		t.Error(err)
	}
}

func TestPoolMetrics(t *testing.T) {
	m := New()
	m.SetPool(func() ([]PoolHost, []PoolQueue) {
		return []PoolHost{
				{URL: "http://a:11434", Up: true, Slots: 4, Busy: 3, Models: 2, Served: 12, Failing: 1},
				{URL: "http://b:11434", Slots: 2},
			}, []PoolQueue{
				{Class: "interactive", Queued: 0},
				{Class: "batch", Queued: 5},
			}
	})
	m.QueueWait("batch", 1200*time.Millisecond)
	m.QueueWait("interactive", 2*time.Millisecond)
	want := `
# HELP agentd_model_queue_length Model calls waiting in the daemon's queue for a free slot, by class (interactive, batch).
# TYPE agentd_model_queue_length gauge
agentd_model_queue_length{class="batch"} 5
agentd_model_queue_length{class="interactive"} 0
# HELP agentd_ollama_host_busy Calls in flight on the Ollama host.
# TYPE agentd_ollama_host_busy gauge
agentd_ollama_host_busy{host="http://a:11434"} 3
agentd_ollama_host_busy{host="http://b:11434"} 0
# HELP agentd_ollama_host_failing_models Models the Ollama host, up, cannot run now (it answered HTTP 500): their calls go to other hosts for a backoff.
# TYPE agentd_ollama_host_failing_models gauge
agentd_ollama_host_failing_models{host="http://a:11434"} 1
agentd_ollama_host_failing_models{host="http://b:11434"} 0
# HELP agentd_ollama_host_up 1 while the Ollama host answers, 0 while its calls go to the other hosts.
# TYPE agentd_ollama_host_up gauge
agentd_ollama_host_up{host="http://a:11434"} 1
agentd_ollama_host_up{host="http://b:11434"} 0
`
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want),
		"agentd_ollama_host_up", "agentd_ollama_host_busy", "agentd_ollama_host_failing_models", "agentd_model_queue_length"); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(m.queueWait); n != 2 {
		t.Errorf("%d queue wait series, want one per class", n)
	}
	var nilM *Metrics
	nilM.SetPool(nil)
	nilM.QueueWait("batch", time.Second)
}
