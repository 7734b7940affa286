package agent

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/daemon/llm"
	"github.com/agentd/agentd/daemon/metrics"
	"github.com/agentd/agentd/daemon/store"
	"github.com/agentd/agentd/internal/ollamatest"
)

// BenchmarkMetricsScrape is one /metrics scrape of a daemon hosting 1,000 agents with
// 20 proposals each (one awaiting a decision): the store reads the gauges need at
// scrape time and the exposition. It reports the scrape's size too.
func BenchmarkMetricsScrape(b *testing.B) {
	const agents, proposals = 1000, 20
	st, err := store.Open(context.Background(), filepath.Join(b.TempDir(), "agentd.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	states := []api.AgentState{api.StateAwaitingDecision, api.StateIdle, api.StateThinking, api.StatePaused}
	err = st.Tx(context.Background(), func(tx *store.Tx) error {
		for i := range agents {
			a := &store.Agent{Agent: api.Agent{ID: fmt.Sprintf("a-%04d", i), Name: fmt.Sprintf("agent-%04d", i), Description: "d",
				Task: "t", State: states[i%len(states)], RunID: fmt.Sprintf("r-%04d", i), Step: proposals,
				PromptTokens: int64(1000 * i), EvalTokens: int64(100 * i), Policy: api.Policy{Mode: "ask"}}}
			if err := tx.InsertAgent(a); err != nil {
				return err
			}
			if err := tx.StartRun(a.RunID, a.ID, a.Task); err != nil {
				return err
			}
			for s := 1; s <= proposals; s++ {
				status := api.ProposalSucceeded
				if s == proposals {
					status = api.ProposalPending
				}
				p := &api.Proposal{ID: fmt.Sprintf("p-%04d-%02d", i, s), AgentID: a.ID, RunID: a.RunID, Step: s,
					Command: "list_folder", Args: []byte(`{"path":"."}`), Hash: "h", Status: status, Model: ollamatest.TinyModelName}
				if err := tx.InsertProposal(p); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	c, err := llm.New(ollamatest.NewFake(b).URL(), nil) // never called: a scrape asks no model
	if err != nil {
		b.Fatal(err)
	}
	sup, err := New(testOptions(func(o *Options) { o.Store, o.LLM, o.Model, o.StateDir = st, c, ollamatest.TinyModelName, b.TempDir() }))
	if err != nil {
		b.Fatal(err)
	}
	m := metrics.New()
	m.SetState(sup.agentViews.MetricsState)
	h := m.Handler()
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	var size int
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("scrape: %d %s", rec.Code, rec.Body)
		}
		size = rec.Body.Len()
	}
	b.ReportMetric(float64(size), "bytes/scrape")
}
