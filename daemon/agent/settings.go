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

	// MaxHelperDepth bounds how deep helpers (start_agent) nest: 1 lets agents people
	// started have helpers, 2 lets those have their own.
	MaxHelperDepth int
	// MaxHelpers bounds how many helpers one agent keeps at once.
	MaxHelpers    int
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
	// AgentBudget bounds each agent over all its runs (MaxWall: its busy time), unless
	// its AgentOverrides or `agentctl budget` say otherwise; zero bounds nothing.
	AgentBudget run.Budget
	// Metrics, if set, is told of steps, decisions and budget stops.
	Metrics Metrics
	// Checkpoints configure the workspace checkpoints; the zero value takes none.
	Checkpoints CheckpointOptions
}

// AgentOverrides are per-agent settings from config, keyed by agent name.
type AgentOverrides struct {
	// Commands replaces the built-in command list for this agent (it must keep finish
	// and ask_user).
	Commands []string
	// DisabledComponents are left out of this agent's pipeline, besides the global ones.
	DisabledComponents []string
	// Allow and Deny are permission patterns for this agent only.
	Allow, Deny []string
	// Budget, when set, replaces Options.AgentBudget for this agent.
	Budget *run.Budget
	// Watchdog's non-zero fields replace the global thresholds for this agent.
	Watchdog watchdog.Config
	// EffectPreview, when set, turns effect previews on or off for this agent, whatever
	// Settings.NoEffectPreview says.
	EffectPreview *bool
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
// run (SIGHUP, agentctl reload); Options carries the first ones. Everything else in
// Options is fixed for the daemon's life. Every value comes from the config (SettingsOf).
type Settings struct {
	Model      string // the fast model
	SmartModel string // optional; thinks again over a step the watchdog caught looping
	// MaxContext caps num_ctx; the model's own context length is probed.
	MaxContext int
	KeepAlive  *time.Duration

	// Directives are the base directives every agent gets.
	Directives api.Directives
	// Commands are the names of the built-in commands agents may use, in prompt order.
	Commands []string
	// DisabledComponents are left out of every agent's pipeline.
	DisabledComponents []string
	// Agents are per-agent overrides, by agent name.
	Agents map[string]AgentOverrides
	// Allow and Deny are the global permission patterns; AutoRead lets read-class
	// commands run without asking.
	Allow, Deny []string
	AutoRead    bool

	MaxInvalidReplies int             // pause after this many invalid replies in a row
	Watchdog          watchdog.Config // the loop watchdog's thresholds; zero fields take its defaults
	ContinuousLimit   int             // steps a continuous-mode run may take without asking
	Limits            commands.Limits
	HistoryEpisodes   int // most episodes shown verbatim; older ones get one line

	// NoEffectPreview turns effect previews off for agents whose overrides do not turn
	// them on ([agent] effect_preview = false); they are on by default where they can run.
	NoEffectPreview bool
}

// OptionsOf is the supervisor's part of cfg: its first settings (SettingsOf), the helpers'
// bounds and each agent's budget. The server adds the parts it built; a test that builds a
// supervisor starts from OptionsOf(config.Default()), so every default is the config's and
// the supervisor keeps none of its own.
func OptionsOf(cfg *config.Config) Options {
	return Options{Settings: SettingsOf(cfg), MaxHelperDepth: cfg.Agent.MaxHelperDepth, MaxHelpers: cfg.Agent.MaxHelpers,
		AgentBudget: agentBudgetOf(cfg), Checkpoints: checkpointOptionsOf(cfg)}
}

// SettingsOf is the reloadable part of cfg, at start (OptionsOf) and on each reload.
func SettingsOf(cfg *config.Config) Settings {
	overrides := map[string]AgentOverrides{}
	for name, o := range cfg.Agents {
		overrides[name] = AgentOverrides{Commands: o.Commands, DisabledComponents: o.DisabledComponents, Allow: o.Allow, Deny: o.Deny,
			Budget: overrideBudget(cfg, o), Watchdog: overrideWatchdog(o), EffectPreview: o.EffectPreview}
	}
	return Settings{
		Model: cfg.Ollama.Model, SmartModel: cfg.Ollama.SmartModel, MaxContext: cfg.Ollama.MaxContext,
		KeepAlive: cfg.Ollama.KeepAlive.Ptr(), Directives: cfg.Directives(), Commands: cfg.Agent.Commands,
		DisabledComponents: cfg.Agent.DisabledComponents,
		Agents:             overrides, Allow: cfg.Permissions.Allow, Deny: cfg.Permissions.Deny, AutoRead: cfg.Permissions.AutoRead,
		MaxInvalidReplies: cfg.Agent.MaxInvalidReplies, ContinuousLimit: cfg.Agent.ContinuousLimit,
		Watchdog:        watchdog.Config{Failures: cfg.Agent.WatchdogFailures, IdleSteps: cfg.Agent.WatchdogIdleSteps},
		NoEffectPreview: !cfg.Agent.EffectPreview,
		Limits:          commands.Limits{Timeout: cfg.Agent.CommandTimeout.Duration, OutputCap: cfg.Agent.OutputCap},
		HistoryEpisodes: cfg.Agent.HistoryEpisodes,
	}
}

// agentBudgetOf is [agent]'s budget over each agent's runs.
func agentBudgetOf(cfg *config.Config) run.Budget {
	return run.Budget{MaxSteps: cfg.Agent.MaxSteps, MaxTokens: cfg.Agent.MaxTokens, MaxWall: cfg.Agent.MaxTime.Duration,
		MaxDisk: int64(cfg.Agent.MaxDisk)}
}

// overrideBudget is [agents.NAME]'s budget: [agent]'s with the fields it sets replaced,
// or nil when it sets none.
func overrideBudget(cfg *config.Config, o config.AgentOverride) *run.Budget {
	if o.MaxSteps == nil && o.MaxTokens == nil && o.MaxTime == nil && o.MaxDisk == nil {
		return nil
	}
	var wall *time.Duration
	var disk *int64
	if o.MaxTime != nil {
		wall = &o.MaxTime.Duration
	}
	if o.MaxDisk != nil {
		disk = new(int64(*o.MaxDisk))
	}
	b := agentBudgetOf(cfg).With(o.MaxSteps, o.MaxTokens, wall, disk)
	return &b
}

// overrideWatchdog is an [agents.NAME] table's thresholds; zero fields keep [agent]'s.
func overrideWatchdog(o config.AgentOverride) watchdog.Config {
	var w watchdog.Config
	if o.WatchdogFailures != nil {
		w.Failures = *o.WatchdogFailures
	}
	if o.WatchdogIdleSteps != nil {
		w.IdleSteps = *o.WatchdogIdleSteps
	}
	return w
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
	return llm.Limits{MaxContext: s.MaxContext, KeepAlive: s.KeepAlive}
}
