package metrics

import (
	"cmp"
	"context"
	"slices"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

var (
	agentsDesc = prometheus.NewDesc("agentd_agents",
		"Agents by state.", []string{"state"}, nil)
	pendingDesc = prometheus.NewDesc("agentd_decisions_pending",
		"Proposals waiting for a person's decision.", nil, nil)
	memoryDesc = prometheus.NewDesc("agentd_memory_index_documents",
		"Documents in the long-term memory index.", nil, nil)
	agentTokensDesc = prometheus.NewDesc("agentd_agent_tokens_total",
		"Model tokens an agent used over its life, by kind (prompt, eval); the agents with the most tokens, at most 100.", []string{"agent", "kind"}, nil)
	scheduleTokensDesc = prometheus.NewDesc("agentd_schedule_tokens_total",
		"Model tokens a schedule's ended runs used; the schedules with the most tokens, at most 100.", []string{"schedule"}, nil)
	scrapeErrDesc = prometheus.NewDesc("agentd_state_scrape_error",
		"1 when reading the store for this scrape failed (the store-backed gauges are then left out).", nil, nil)
)

// stateCollector reads the store-backed gauges at scrape time.
type stateCollector struct {
	f atomic.Pointer[func(ctx context.Context) (State, error)]
}

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{agentsDesc, pendingDesc, memoryDesc, agentTokensDesc, scheduleTokensDesc, scrapeErrDesc} {
		ch <- d
	}
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	f := c.f.Load()
	if f == nil {
		return
	}
	// A scrape must not hang on a busy store; Prometheus' own timeout is 10s by default.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := (*f)(ctx)
	if err != nil {
		ch <- prometheus.MustNewConstMetric(scrapeErrDesc, prometheus.GaugeValue, 1)
		return
	}
	ch <- prometheus.MustNewConstMetric(scrapeErrDesc, prometheus.GaugeValue, 0)
	seen := map[string]bool{}
	for _, s := range AgentStates {
		seen[s] = true
		ch <- prometheus.MustNewConstMetric(agentsDesc, prometheus.GaugeValue, float64(st.AgentsByState[s]), s)
	}
	for s, n := range st.AgentsByState {
		if !seen[s] {
			ch <- prometheus.MustNewConstMetric(agentsDesc, prometheus.GaugeValue, float64(n), s)
		}
	}
	ch <- prometheus.MustNewConstMetric(pendingDesc, prometheus.GaugeValue, float64(st.DecisionsPending))
	if st.MemoryDocuments >= 0 {
		ch <- prometheus.MustNewConstMetric(memoryDesc, prometheus.GaugeValue, float64(st.MemoryDocuments))
	}
	agents := slices.Clone(st.AgentTokens)
	slices.SortFunc(agents, func(a, b AgentTokens) int {
		return cmp.Or(cmp.Compare(b.PromptTokens+b.EvalTokens, a.PromptTokens+a.EvalTokens), cmp.Compare(a.Agent, b.Agent))
	})
	for _, a := range agents[:min(len(agents), MaxNamedSeries)] {
		ch <- prometheus.MustNewConstMetric(agentTokensDesc, prometheus.CounterValue, float64(a.PromptTokens), a.Agent, "prompt")
		ch <- prometheus.MustNewConstMetric(agentTokensDesc, prometheus.CounterValue, float64(a.EvalTokens), a.Agent, "eval")
	}
	scheds := slices.Clone(st.ScheduleTokens)
	slices.SortFunc(scheds, func(a, b ScheduleTokens) int {
		return cmp.Or(cmp.Compare(b.Tokens, a.Tokens), cmp.Compare(a.Schedule, b.Schedule))
	})
	for _, s := range scheds[:min(len(scheds), MaxNamedSeries)] {
		ch <- prometheus.MustNewConstMetric(scheduleTokensDesc, prometheus.CounterValue, float64(s.Tokens), s.Schedule)
	}
}
