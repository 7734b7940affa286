package cli_test

import (
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/internal/testutil"
)

// The daemon probes Ollama about once a minute; status shows how old its view is.
func TestStatusShowsOllamaCheckAge(t *testing.T) {
	tests := []struct {
		name      string
		reachable bool
		age       time.Duration
		want      string
	}{
		{"reachable_just_now", true, 0, "ollama:        http://127.0.0.1:11434, version 0.17.4 (checked just now)\n"},
		{"reachable_42s_ago", true, 42 * time.Second, "ollama:        http://127.0.0.1:11434, version 0.17.4 (checked 42s ago)\n"},
		{"unreachable_3m_ago", false, 3 * time.Minute, "ollama:        http://127.0.0.1:11434 unreachable: connection refused (checked 3m0s ago)\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeDaemon(t)
			f.mu.Lock()
			f.status.Ollama.Reachable = tt.reachable
			if !tt.reachable {
				f.status.Ollama.Error = "connection refused"
			}
			f.status.Ollama.CheckedAt = time.Now().Add(-tt.age)
			f.mu.Unlock()
			r := runCLI(t, "", "--socket", f.sock, "status")
			if !strings.Contains(r.stdout, tt.want) {
				t.Errorf("status lacks %q:\n%s", tt.want, r.stdout)
			}
		})
	}
}

// An unreachable Ollama's hint names what to change where agentd took its address from:
// the config file's [[ollama.hosts]] url is not fixed by setting $OLLAMA_HOST.
func TestStatusHintNamesWhereTheOllamaHostCameFrom(t *testing.T) {
	tests := []struct{ from, want, notWant string }{
		{"config", "fix [[ollama.hosts]] url in agentd's config", "OLLAMA_HOST"},
		{"OLLAMA_HOST", "fix agentd's $OLLAMA_HOST", "fix [[ollama.hosts]] url"},
		{"default", "point agentd at a running one: [[ollama.hosts]] url in its config", "fix "},
	}
	for _, tt := range tests {
		t.Run(tt.from, func(t *testing.T) {
			f := newFakeDaemon(t)
			f.mu.Lock()
			f.status.Ollama.Reachable, f.status.Ollama.Error, f.status.Ollama.HostFrom = false, "connection refused", tt.from
			f.mu.Unlock()
			r := runCLI(t, "", "--socket", f.sock, "status")
			if !strings.Contains(r.stdout, tt.want) || strings.Contains(r.stdout, tt.notWant) {
				t.Errorf("status says, want %q and not %q:\n%s", tt.want, tt.notWant, r.stdout)
			}
		})
	}
}

// TestStatusPoolGolden renders a pool of two Ollama hosts, one down and one that cannot
// load one of its models, and the queue of model calls (testdata/pool/*.golden).
func TestStatusPoolGolden(t *testing.T) {
	f := newEnvDaemon(t)
	f.mu.Lock()
	f.status.Ollama.Host = "http://127.0.0.1:11434, http://gpu-box:11434"
	f.status.Ollama.Hosts = []api.OllamaHostStatus{
		{URL: "http://127.0.0.1:11434", Up: true, Slots: 4, Busy: 3, Served: 1208, Models: []string{"qwen3:4b", "qwen3:8b"},
			Failing: []api.OllamaModelFailing{{Model: "qwen3:8b", RetryInMS: 1800,
				Error: "ollama at http://127.0.0.1:11434: chat: HTTP 500 Internal Server Error: model requires more system memory (5.2 GiB) than is available (1.9 GiB)"}}},
		{URL: "http://gpu-box:11434", Slots: 2, Models: []string{"qwen3:8b"}, ModelsConfigured: true, RetryInMS: 4200,
			Error: "ollama at http://gpu-box:11434: tags: dial tcp 10.0.0.7:11434: connect: connection refused"},
	}
	f.status.Ollama.Queue = []api.ModelQueueStatus{
		{Class: "interactive", Queued: 0, Served: 40, WaitP50MS: 0.2, WaitP99MS: 812.5, WaitMaxMS: 900},
		{Class: "batch", Queued: 5, Served: 1168, WaitP50MS: 1400, WaitP99MS: 9120, WaitMaxMS: 12000},
	}
	f.mu.Unlock()
	runGoldens(t, f, testutil.ShortTempDir(t), "testdata/pool/*.golden")
}
