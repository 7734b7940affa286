package server

import (
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/agentd/agentd/daemon/agent"
	"github.com/agentd/agentd/daemon/config"
	"github.com/agentd/agentd/daemon/llm"
	"github.com/agentd/agentd/memory"
)

// openMemory opens the memory index under the state directory when [memory] is enabled.
// A missing or damaged index opens empty; the supervisor rebuilds it from the store in the
// background. The caller closes the index after the agents have stopped.
func openMemory(cfg *config.Config, lc *llm.Client, log *slog.Logger) (agent.MemoryOptions, error) {
	m := cfg.Memory
	if !m.Enabled {
		log.Info("long-term memory is off ([memory] enabled = false)")
		return agent.MemoryOptions{}, nil
	}
	opts := memory.Options{Logger: log, BatchDelay: agent.IndexBatchDelay}
	if m.EmbedModel != "" {
		// Failures are logged by the index (at most every 30s) and searches go on with BM25.
		opts.Embedder = llm.Embedder{Client: lc, Model: m.EmbedModel}
	}
	ix, err := memory.Open(filepath.Join(cfg.StateDir, "memory"), opts)
	if err != nil {
		return agent.MemoryOptions{}, fmt.Errorf("memory: %w", err)
	}
	return agent.MemoryOf(m, ix), nil
}
