package agent

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/daemon/agent/policy"
	"github.com/agentd/agentd/daemon/agent/watchdog"
	"github.com/agentd/agentd/daemon/config"
	"github.com/agentd/agentd/daemon/llm"
	"github.com/agentd/agentd/daemon/run"
	"github.com/agentd/agentd/daemon/store"
	"github.com/agentd/agentd/memory"
)

// Options configure a Supervisor: OptionsOf(cfg) and the parts the server built. Settings
// are only the first settings: read them through Supervisor.live, never from Options,
// since Reload changes them.
type Options struct {
	Settings
	Store *store.Store
	LLM   *llm.Client
	// Components are extra components (web, shell, MCP tools) the server built from
	// config; the supervisor adds its own (directives, profile, commands, context,
	// history, clock).
	Components []commands.Component

	// WorkspaceRoot holds the agents' workspaces (config.Config.WorkspaceRoot, resolved).
	WorkspaceRoot string
	// Memory is long-term memory; its zero value (no Index) turns it off.
	Memory MemoryOptions
	Log    *slog.Logger
	// Backoff returns the wait before retry attempt n (n ≥ 1) while the model is unavailable.
	Backoff  func(n int) time.Duration
	Version  string
	StateDir string
	// HealthChecks are agentctl doctor's checks of what the server built around the
	// supervisor (MCP servers, the shell sandbox, chat bots).
	HealthChecks []HealthCheck
	// Now is the clock the prompt shows (tests).
	Now func() time.Time
	// OnRunEnd, if set, is told how every run ended (finished, denied, stopped, over
	// budget, or its agent removed), after the end is stored, holding no lock. The
	// scheduler records its runs' ends through it.
	OnRunEnd func(run.End)
	// OnAgentRemoved, if set, is told of every agent removed (its helpers included), once
	// it is gone from the store: what the server keeps per agent goes with it (its cgroup).
	OnAgentRemoved func(id string)
	// Metrics, if set, is told of steps, decisions and budget stops.
	Metrics Metrics
	// Checkpoints configure the workspace checkpoints; the zero value takes none.
	Checkpoints CheckpointOptions
}

// MemoryOptions configure long-term memory: MemoryOf(cfg.Memory, index).
type MemoryOptions struct {
	// Index is the open memory index; nil turns long-term memory off (no memory component,
	// no memory commands, nothing written to the memories table).
	Index *memory.Index
	// K is how many relevant memories a prompt shows at most (at num_ctx 2048 most of
	// them as snippets).
	K int
	// BudgetTokens caps the tokens they take; on a small context they get at most two
	// fifths of what the rest of the prompt leaves.
	BudgetTokens int
	// HalfLife, when set, makes older memories rank lower: a memory HalfLife old counts half.
	HalfLife time.Duration
	// EmbedModel names the embedding model in use, for stats only ("" without one).
	EmbedModel string
}

// MemoryOf is [memory]'s options over the open index ix (nil: memory off).
func MemoryOf(m config.MemoryConfig, ix *memory.Index) MemoryOptions {
	return MemoryOptions{Index: ix, K: m.K, BudgetTokens: m.BudgetTokens, HalfLife: m.HalfLifeDuration(), EmbedModel: m.EmbedModel}
}

// HealthCheck is one check agentctl doctor runs beyond the supervisor's own (the server
// adds the MCP servers, the shell sandbox, the chat bots...).
type HealthCheck func(ctx context.Context) []api.Check

// Settings are the supervisor's settings that a config reload may change while agents
// run (SIGHUP, agentctl reload): the config's own sections, read as they are, so every
// value and every default is the config's. Options carries the first ones; everything
// else in Options is fixed for the daemon's life.
type Settings struct {
	// OllamaConfig gives Model, SmartModel (thinks again over a step the watchdog caught
	// looping), MaxContext (caps num_ctx) and KeepAlive.
	config.OllamaConfig
	// AgentConfig gives the base directives, Commands, DisabledComponents, the watchdog's
	// thresholds, MaxInvalidReplies, ContinuousLimit, the command limits,
	// HistoryEpisodes and EffectPreview.
	config.AgentConfig
	// PermissionsConfig gives the global Allow and Deny patterns and AutoRead.
	config.PermissionsConfig
	// Agents are per-agent overrides, by agent name.
	Agents map[string]config.AgentOverride
}

// OptionsOf is the supervisor's part of cfg: its first settings (SettingsOf), whose
// AgentConfig.Budget bounds each agent over all its runs, and the checkpoints. The server
// adds the parts it built; a test that builds a supervisor starts from
// OptionsOf(config.Default()), so every default is the config's and the supervisor keeps
// none of its own.
func OptionsOf(cfg *config.Config) Options {
	return Options{Settings: SettingsOf(cfg), Checkpoints: checkpointOptionsOf(cfg)}
}

// SettingsOf is the reloadable part of cfg, at start (OptionsOf) and on each reload.
func SettingsOf(cfg *config.Config) Settings {
	return Settings{OllamaConfig: cfg.Ollama, AgentConfig: cfg.Agent, PermissionsConfig: cfg.Permissions, Agents: cfg.Agents}
}

// watchdogConfig is [agent]'s loop thresholds.
func (s Settings) watchdogConfig() watchdog.Config {
	return watchdog.Config{Failures: s.WatchdogFailures, IdleSteps: s.WatchdogIdleSteps}
}

// commandLimits bound every command's execution and the output it keeps.
func (s Settings) commandLimits() commands.Limits {
	return commands.Limits{Timeout: s.CommandTimeout.Duration, OutputCap: s.OutputCap}
}

// live is one generation of settings with what is built from them: the permission rules
// and the component pipelines. A generation is never changed once published; a reload
// publishes a new one. Each loop round of an agent reads the current one once and uses
// it to the end of the round, so a step under way finishes with the settings it began
// with and the next step uses the new ones.
type live struct {
	Settings
	policy         policy.Settings               // the permission patterns parsed, for every authorization
	pipeline       *commands.Pipeline            // every agent's, unless overridden
	agentPipelines map[string]*commands.Pipeline // by agent name
}

// pipelineFor returns the agent's pipeline. A helper ("boss/fetcher") has no config
// table of its own: it works under its top agent's.
func (l *live) pipelineFor(name string) *commands.Pipeline {
	if p, ok := l.agentPipelines[name]; ok {
		return p
	}
	if root, _, ok := strings.Cut(name, "/"); ok {
		if p, ok := l.agentPipelines[root]; ok {
			return p
		}
	}
	return l.pipeline
}

// limits are the config's part of every model call's load options (llm.Client.LoadFor).
func (s Settings) limits() llm.Limits {
	return llm.Limits{MaxContext: s.MaxContext, KeepAlive: s.KeepAlive.Ptr()}
}
