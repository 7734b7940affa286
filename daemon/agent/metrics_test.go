package agent

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/daemon/llm"
	"github.com/agentd/agentd/daemon/metrics"
	"github.com/agentd/agentd/daemon/store"
	"github.com/agentd/agentd/internal/ollamatest"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// scrape fetches srv's /metrics and parses the text exposition.
func scrape(t *testing.T, srv *httptest.Server) map[string]*dto.MetricFamily {
	t.Helper()
	res, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(res.Body)
		t.Fatalf("scrape: %s: %s", res.Status, b)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(res.Body)
	if err != nil {
		t.Fatalf("parsing the exposition: %v", err)
	}
	return fams
}

// value returns the sample of family name whose labels include want (a histogram gives
// its count), or -1 when there is none.
func value(fams map[string]*dto.MetricFamily, name string, want ...string) float64 {
	f := fams[name]
	if f == nil {
		return -1
	}
next:
	for _, m := range f.Metric {
		for i := 0; i+1 < len(want); i += 2 {
			found := false
			for _, l := range m.Label {
				if l.GetName() == want[i] && l.GetValue() == want[i+1] {
					found = true
				}
			}
			if !found {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		}
	}
	return -1
}

// metricsHarness is a harness whose supervisor and model client report to a Metrics
// served by an httptest server.
func metricsHarness(t *testing.T, mod ...func(*Options)) (*harness, *metrics.Metrics, *httptest.Server) {
	m := metrics.New()
	h := newHarness(t, append([]func(*Options){func(o *Options) {
		o.Metrics = m
		c, err := llm.New(o.LLM.Host(), nil)
		if err != nil {
			t.Fatal(err)
		}
		c.Observe(func(c llm.Call) { m.ModelCall(c.Model, c.Duration, c.PromptTokens, c.EvalTokens, c.Err) })
		o.LLM = c
	}}, mod...)...)
	m.SetState(h.sup.agentViews.MetricsState)
	mux := http.NewServeMux()
	mux.Handle("/metrics", m.Handler())
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return h, m, srv
}

func TestMetricsCountStepsDecisionsAndTokens(t *testing.T) {
	h, _, srv := metricsHarness(t)
	h.fake.Script(
		reply("write_file", map[string]string{"path": "a.txt", "contents": "hello"}),
		reply("test_side_effect", map[string]string{"what": "x"}),
		reply("list_folder", map[string]string{"path": "."}),
		reply("read_file", map[string]string{"path": "a.txt"}),
		reply("finish", map[string]string{"reason": "done"}),
	)
	a := h.create(api.CreateAgentRequest{})
	decide := func(text string) {
		t.Helper()
		p := h.pending(a.ID)
		req, err := api.ParseDecision(text)
		if err != nil {
			t.Fatal(err)
		}
		req.ProposalID, req.Source, req.By = p.ID, "agentctl", "tester"
		if _, err := h.sup.decisions.Decide(context.Background(), a.ID, req); err != nil {
			t.Fatal(err)
		}
	}
	decide("y") // write_file
	h.pending(a.ID)
	fams := scrape(t, srv)
	if got := value(fams, "agentd_decisions_pending"); got != 1 {
		t.Errorf("decisions pending with a proposal open = %v, want 1", got)
	}
	if got := value(fams, "agentd_agents", "state", "awaiting_decision"); got != 1 {
		t.Errorf("agents awaiting a decision = %v, want 1", got)
	}
	decide("look around first") // test_side_effect: feedback
	decide("y -2")              // list_folder, and read_file runs unasked
	decide("n")                 // finish
	h.waitFor(a.ID, "idle", func(a *api.Agent) bool { return a.State == api.StateIdle })

	fams = scrape(t, srv)
	got, _ := h.sup.agentViews.Agent(context.Background(), a.ID)
	model := ollamatest.TinyModelName
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"agentd_steps_total", []string{"outcome", "succeeded"}, 3},
		{"agentd_steps_total", []string{"outcome", "feedback"}, 1},
		{"agentd_steps_total", []string{"outcome", "denied"}, 1},
		{"agentd_decisions_total", []string{"outcome", "approved", "source", "cli"}, 2},
		{"agentd_decisions_total", []string{"outcome", "feedback", "source", "cli"}, 1},
		{"agentd_decisions_total", []string{"outcome", "denied", "source", "cli"}, 1},
		{"agentd_decisions_total", []string{"outcome", "auto", "source", "auto"}, 1},
		{"agentd_model_call_duration_seconds", []string{"model", model, "result", "ok"}, 5},
		{"agentd_command_duration_seconds", []string{"command", "write_file", "outcome", "succeeded"}, 1},
		{"agentd_command_duration_seconds", []string{"command", "list_folder", "outcome", "succeeded"}, 1},
		{"agentd_command_duration_seconds", []string{"command", "read_file", "outcome", "succeeded"}, 1},
		{"agentd_command_duration_seconds", []string{"command", "test_side_effect"}, -1}, // feedback: not run
		{"agentd_model_tokens_total", []string{"model", model, "kind", "prompt"}, float64(got.PromptTokens)},
		{"agentd_model_tokens_total", []string{"model", model, "kind", "eval"}, float64(got.EvalTokens)},
		{"agentd_agent_tokens_total", []string{"agent", "tester", "kind", "prompt"}, float64(got.PromptTokens)},
		{"agentd_agent_tokens_total", []string{"agent", "tester", "kind", "eval"}, float64(got.EvalTokens)},
		{"agentd_decisions_pending", nil, 0},
		{"agentd_agents", []string{"state", "idle"}, 1},
		{"agentd_agents", []string{"state", "awaiting_decision"}, 0},
		{"agentd_state_scrape_error", nil, 0},
	} {
		if v := value(fams, c.name, c.labels...); v != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, v, c.want)
		}
	}
	if len(got.Runs) != 1 || got.Runs[0].Tokens != got.PromptTokens+got.EvalTokens || got.Runs[0].Steps != 5 || got.Runs[0].Outcome != "denied" {
		t.Errorf("runs = %+v, want the one denied run with 5 steps and the agent's tokens", got.Runs)
	}
	if got.StepsTotal != 5 {
		t.Errorf("steps over all runs = %d, want 5", got.StepsTotal)
	}
	if got.PromptTokens <= 0 || got.EvalTokens <= 0 {
		t.Errorf("agent tokens = %d/%d: the fake reports counts, so both should be positive", got.PromptTokens, got.EvalTokens)
	}
	for _, name := range []string{"go_goroutines", "process_resident_memory_bytes"} {
		if fams[name] == nil {
			t.Errorf("%s missing: the Go and process collectors are registered", name)
		}
	}
	if fams["agentd_memory_index_documents"] != nil {
		t.Error("memory documents reported without a memory index")
	}
}

func TestMetricsDecisionLabels(t *testing.T) {
	for _, c := range []struct{ kind, source, by, outcome, src string }{
		{"approve", "agentctl", "ann", "approved", "cli"},
		{"approve", "slack", "U1", "approved", "slack"},
		{"deny", "discord", "u", "denied", "discord"},
		{"feedback", "policy", "deny pattern shell(rm *)", "feedback", "policy"},
		{"approve", "policy", "auto", "auto", "auto"},
		{"approve", "policy", "continuous", "auto", "auto"},
		{"approve", "grant", "ann", "auto", "auto"},
		{"deny", "grant", "ann", "denied", "other"},
		{"approve", "policy", "allow pattern read_file(*)", "approved", "policy"},
		{"approve", "made-up-source", "x", "approved", "other"},
	} {
		t.Run(fmt.Sprintf("%s_%s_%s", c.kind, c.source, c.by), func(t *testing.T) {
			o, s := metrics.DecisionLabels(c.kind, c.source, c.by)
			if o != c.outcome || s != c.src {
				t.Errorf("labels = %s/%s, want %s/%s", o, s, c.outcome, c.src)
			}
		})
	}
}

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
