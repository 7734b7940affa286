package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	ollama "github.com/ollama/ollama/api"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/daemon/config"
	"github.com/agentd/agentd/internal/ollamatest"
	"github.com/agentd/agentd/internal/testutil"
)

// oneRoundWorkflow is the smallest team run: two roles talk once and the phase is reflected on.
const oneRoundWorkflow = `name = "round"
root = "talk"
max_turns = 6
[roles.ceo]
description = "Chief Executive Officer"
prompt = "You are the CEO. You give instructions."
[roles.cto]
description = "Chief Technology Officer"
prompt = "You are the CTO. You follow instructions."
[phases.agree]
instructor = "ceo"
assistant = "cto"
prompt = "Task: {{task}}. Agree on a plan."
store = "plan"
max_turns = 4
reflect = true
[states.talk]
phases = ["agree"]
next = ["end"]
`

// mixedWorkload answers every kind of model call the daemon makes and counts them.
type mixedWorkload struct {
	page string // the read_webpage URL the agent's first step reads

	mu    sync.Mutex
	steps int
	seen  map[string]int // by kind: profile, step, summary, web, team
}

var numberedLineRE = regexp.MustCompile(`(?m)^\d+\. `)

func (w *mixedWorkload) reply(req *ollama.ChatRequest) (string, error) {
	system := ""
	if len(req.Messages) > 0 && req.Messages[0].Role == "system" {
		system = req.Messages[0].Content
	}
	user := req.Messages[len(req.Messages)-1].Content
	format := string(req.Format)
	w.mu.Lock()
	defer w.mu.Unlock()
	kind, out := "", ""
	switch {
	case strings.Contains(system, "You create autonomous agents"):
		kind, out = "profile", `{"name":"page-reader","description":"reads pages","best_practices":["be brief"],"constraints":["stay local"]}`
	case strings.Contains(system, "You keep the log"):
		lines := make([]string, len(numberedLineRE.FindAllString(user, -1)))
		for i := range lines {
			lines[i] = fmt.Sprintf("wrote file %d", i+1)
		}
		b, _ := json.Marshal(map[string][]string{"lines": lines})
		kind, out = "summary", string(b)
	case strings.Contains(system, "Answer from the text below only"):
		kind, out = "web", "the page says hello"
	case strings.Contains(format, `"thoughts"`):
		w.steps++
		kind, out = "step", proposal("write_file", fmt.Sprintf(`{"path":"f%d.txt","contents":"step %d"}`, w.steps, w.steps))
		if w.steps == 1 {
			out = proposal("read_webpage", fmt.Sprintf(`{"url":%q,"question":"what does it say?"}`, w.page))
		}
	case strings.Contains(format, `"conclusion"`):
		kind, out = "team", `{"conclusion":"ship it"}`
	case strings.HasPrefix(system, "You are ceo,"):
		kind, out = "team", "Instruction: write the plan."
	case strings.HasPrefix(system, "You are cto,"):
		kind, out = "team", "<INFO> the plan is written"
	default:
		return "", fmt.Errorf("test: unexpected model call (system %.80q, format %.80q)", system, format)
	}
	w.seen[kind]++
	return out, nil
}

func (w *mixedWorkload) count(kind string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.seen[kind]
}

// TestMixedWorkloadNeverReloadsTheModel runs every kind of model call the daemon makes —
// an agent created from a bare task (profile), its steps, history summaries, a
// read_webpage summary and a team run — against a fake that follows Ollama's reload rule,
// and checks that no request changed the model's load options (so a real server never
// reloaded it) and that [ollama] max_context capped every one of them.
func TestMixedWorkloadNeverReloadsTheModel(t *testing.T) {
	for _, tc := range []struct {
		name       string
		maxContext int // 0: the config's default
		modelCtx   int // what the model reports
		want       int // num_ctx of every request
	}{
		{"defaults", 0, ollamatest.FakeContextLength, 8192},
		{"max_context_caps_every_call", 1024, ollamatest.FakeContextLength, 1024},
		{"model_context_caps_every_call", 0, 2048, 2048},
	} {
		t.Run(tc.name, func(t *testing.T) {
			page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/html")
				fmt.Fprint(w, "<html><body><p>hello from the page "+strings.Repeat("word ", 3000)+"</p></body></html>")
			}))
			t.Cleanup(page.Close)
			work := &mixedWorkload{page: page.URL, seen: map[string]int{}}
			model := ollamatest.NewFake(t)
			model.SetContextLength(tc.modelCtx)
			model.OnChat(work.reply)

			cfg := testConfig(t, model, "")
			cfg.Slack.Enabled = false
			cfg.Socket = filepath.Join(testutil.ShortTempDir(t), "s.sock")
			if tc.maxContext > 0 {
				cfg.Ollama.MaxContext = tc.maxContext
			}
			cfg.WebCommands.Enabled, cfg.WebCommands.AllowPrivate = true, true
			stop := runDaemon(t, cfg, slog.New(slog.DiscardHandler))
			c := &api.Client{Socket: cfg.Socket}
			ctx := context.Background()

			a, err := api.CreateAgentRoute.Do(ctx, c, "", api.CreateAgentRequest{Task: "read the page, then keep notes in files",
				Policy: &api.Policy{Mode: "continuous", ContinuousLimit: 1 << 30}})
			if err != nil {
				t.Fatal(err)
			}
			tr, err := api.StartTeamRoute.Do(ctx, c, "", api.TeamRunRequest{Workflow: oneRoundWorkflow, File: "round.toml", Task: "plan a release"})
			if err != nil {
				t.Fatal(err)
			}
			if !testutil.Wait(60*time.Second, func() bool {
				r, err := api.TeamRoute.Do(ctx, c, tr.ID, api.None{})
				return work.count("profile") > 0 && work.count("web") > 0 && work.count("summary") > 0 &&
					err == nil && r.Status != api.TeamRunning
			}) {
				t.Fatalf("the workload did not complete: calls %v", work.seen)
			}
			if _, err := api.StopRoute.Do(ctx, c, a.ID, api.None{}); err != nil {
				t.Fatal(err)
			}
			if err := stop(); err != nil {
				t.Fatal(err)
			}
			if r := model.Reloads(); len(r) > 0 {
				t.Errorf("%d reloads, want none; first: %v", len(r), r[0])
			}
			loads := model.Loads(ollamatest.TinyModelName)
			for i, ld := range loads {
				if ld.Runner.NumCtx != tc.want {
					t.Fatalf("request %d of %d: num_ctx %d, want %d", i+1, len(loads), ld.Runner.NumCtx, tc.want)
				}
			}
			for _, r := range model.Requests() {
				if n, _ := r.Options["num_predict"].(float64); int(n) > tc.want {
					t.Errorf("num_predict %v exceeds num_ctx %d", n, tc.want)
				}
				// The prompt was budgeted to that size too (counted as the fake counts it).
				tokens := 1
				for _, m := range r.Messages {
					tokens += 4 + len(m.Content)/4 + 1
				}
				if tokens > tc.want {
					t.Errorf("a prompt of %d tokens (system %.60q) exceeds num_ctx %d", tokens, r.Messages[0].Content, tc.want)
				}
			}
			t.Logf("%d requests, calls by kind %v", len(loads), work.seen)
		})
	}
}

// TestDaemonPoolOfTwoHosts starts the daemon on two fake Ollama servers listed in
// [[ollama.hosts]]: status shows both with their slots and models, /v0/metrics has their
// gauges, and with one down an agent still steps on the other.
func TestDaemonPoolOfTwoHosts(t *testing.T) {
	a, b := ollamatest.NewFake(t), ollamatest.NewFake(t)
	for _, f := range []*ollamatest.Fake{a, b} {
		f.Script(proposal("ask_user", `{"question":"ready?"}`))
	}
	cfg := config.Default()
	cfg.Ollama.Model = ollamatest.TinyModelName
	cfg.Ollama.Hosts = []config.OllamaHost{{URL: a.URL(), Slots: 2}, {URL: b.URL(), Models: []string{ollamatest.TinyModelName}}}
	cfg.WebCommands.Enabled = false
	cfg.StateDir, cfg.Socket = t.TempDir(), filepath.Join(testutil.ShortTempDir(t), "s.sock")
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	defer runDaemon(t, cfg, slog.New(slog.DiscardHandler))()
	c := &api.Client{Socket: cfg.Socket}

	a.SetDown(true)
	ag, err := api.CreateAgentRoute.Do(context.Background(), c, "", api.CreateAgentRequest{Name: "pooled", Description: "d", Task: "t"})
	if err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, "a step on the host that is up", func() bool {
		got, err := api.AgentRoute.Do(context.Background(), c, ag.ID, api.None{})
		return err == nil && got.State == api.StateAwaitingDecision
	})
	st, err := api.StatusRoute.Do(context.Background(), c, "", api.None{})
	if err != nil {
		t.Fatal(err)
	}
	hs := st.Ollama.Hosts
	if len(hs) != 2 || hs[0].Up || hs[0].Slots != 2 || !hs[1].Up || hs[1].Slots != 1 || hs[1].Served == 0 ||
		!hs[1].ModelsConfigured || len(st.Ollama.Queue) != 2 {
		t.Errorf("status: %+v", st.Ollama)
	}

	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", cfg.Socket)
	}}}
	resp, err := hc.Get("http://agentd/v0/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`agentd_ollama_host_up{host="` + a.URL() + `"} 0`,
		`agentd_ollama_host_up{host="` + b.URL() + `"} 1`,
		`agentd_ollama_host_failing_models{host="` + b.URL() + `"} 0`,
		`agentd_model_queue_length{class="interactive"} 0`,
		`agentd_model_queue_wait_seconds_count{class="interactive"}`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/v0/metrics lacks %q", want)
		}
	}
}
