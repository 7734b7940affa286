package cli_test

import (
	"testing"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/internal/testutil"
)

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
