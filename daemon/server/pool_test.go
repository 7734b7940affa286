package server

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/daemon/config"
	"github.com/agentd/agentd/internal/ollamatest"
	"github.com/agentd/agentd/internal/testutil"
)

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
	ctx, cancel := context.WithCancel(context.Background())
	ready, done := make(chan struct{}), make(chan error, 1)
	go func() {
		done <- Run(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), Options{Version: "test", Ready: func() { close(ready) }})
	}()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("the daemon did not start: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("the daemon did not start")
	}
	defer func() { cancel(); <-done }()
	c := &api.Client{Socket: cfg.Socket}

	a.SetDown(true)
	ag, err := c.CreateAgent(context.Background(), api.CreateAgentRequest{Name: "pooled", Description: "d", Task: "t"})
	if err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, "a step on the host that is up", func() bool {
		got, err := c.Agent(context.Background(), ag.ID)
		return err == nil && got.State == api.StateAwaitingDecision
	})
	st, err := c.Status(context.Background())
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
