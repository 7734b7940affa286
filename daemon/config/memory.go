package config

import (
	"strings"
	"time"
)

// MemoryConfig is the [memory] section: long-term memory.
type MemoryConfig struct {
	// Enabled keeps long-term memory: what agents did, were told, saved and wrote goes to
	// the database and a search index under the state directory, and the most relevant of
	// it into each prompt. Off: no memory component, no memory_add/memory_search.
	Enabled bool `toml:"enabled"`
	// K is how many relevant memories a prompt shows at most.
	K int `toml:"k"`
	// BudgetTokens caps the prompt tokens those memories take; small contexts give them less.
	BudgetTokens int `toml:"budget_tokens"`
	// HalfLife, when more than 0, ranks older memories lower: one this old counts half.
	HalfLife Duration `toml:"half_life"`
	// EmbedModel, when set, embeds memories with this Ollama model (/api/embed) and fuses
	// the vector ranking with BM25; when embedding fails, search is BM25 alone.
	EmbedModel string `toml:"embed_model"`
}

func defaultMemory() MemoryConfig {
	return MemoryConfig{Enabled: true, K: 25, BudgetTokens: 2500}
}

// HalfLifeDuration returns the half-life, 0 for none.
func (m MemoryConfig) HalfLifeDuration() time.Duration { return m.HalfLife.Duration }

func (m MemoryConfig) problems(bad func(key, format string, args ...any)) {
	if m.K < 1 || m.K > 100 {
		bad("memory.k", "must be 1 to 100 memories, got %d", m.K)
	}
	if m.BudgetTokens < 100 {
		bad("memory.budget_tokens", "must be at least 100 tokens, got %d", m.BudgetTokens)
	}
	if m.HalfLife.Duration < 0 {
		bad("memory.half_life", "must not be negative, got %s; \"0s\" turns recency off", m.HalfLife)
	}
	if strings.ContainsAny(m.EmbedModel, " \t\n") {
		bad("memory.embed_model", "%q has spaces; want a model name like %q", m.EmbedModel, "nomic-embed-text")
	}
}
