package agent

import (
	"fmt"
	"strings"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/daemon/agent/policy"
	"github.com/agentd/agentd/daemon/agent/watchdog"
	"github.com/agentd/agentd/daemon/config"
	"github.com/agentd/agentd/daemon/llm"
	"github.com/agentd/agentd/daemon/run"
)

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
	// ComponentOrder names components to place first, in this order; the rest follow in
	// their default order.
	ComponentOrder []string
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
}

// OptionsOf is the supervisor's part of cfg: its first settings (SettingsOf), the helpers'
// bounds and each agent's budget. The server adds the parts it built; a test that builds a
// supervisor starts from OptionsOf(config.Default()), so every default is the config's and
// the supervisor keeps none of its own.
func OptionsOf(cfg *config.Config) Options {
	return Options{Settings: SettingsOf(cfg), MaxHelperDepth: cfg.Agent.MaxHelperDepth, MaxHelpers: cfg.Agent.MaxHelpers,
		AgentBudget: agentBudgetOf(cfg)}
}

// SettingsOf is the reloadable part of cfg, at start (OptionsOf) and on each reload.
func SettingsOf(cfg *config.Config) Settings {
	overrides := map[string]AgentOverrides{}
	for name, o := range cfg.Agents {
		overrides[name] = AgentOverrides{Commands: o.Commands, DisabledComponents: o.DisabledComponents, Allow: o.Allow, Deny: o.Deny,
			Budget: overrideBudget(cfg, o), Watchdog: overrideWatchdog(o)}
	}
	return Settings{
		Model: cfg.Ollama.Model, SmartModel: cfg.Ollama.SmartModel, MaxContext: cfg.Ollama.MaxContext,
		KeepAlive: cfg.Ollama.KeepAlive.Ptr(), Directives: cfg.Directives(), Commands: cfg.Agent.Commands,
		ComponentOrder: cfg.Agent.ComponentOrder, DisabledComponents: cfg.Agent.DisabledComponents,
		Agents: overrides, Allow: cfg.Permissions.Allow, Deny: cfg.Permissions.Deny, AutoRead: cfg.Permissions.AutoRead,
		MaxInvalidReplies: cfg.Agent.MaxInvalidReplies, ContinuousLimit: cfg.Agent.ContinuousLimit,
		Watchdog:        watchdog.Config{Failures: cfg.Agent.WatchdogFailures, IdleSteps: cfg.Agent.WatchdogIdleSteps},
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
	b := agentBudgetOf(cfg)
	if o.MaxSteps != nil {
		b.MaxSteps = *o.MaxSteps
	}
	if o.MaxTokens != nil {
		b.MaxTokens = *o.MaxTokens
	}
	if o.MaxTime != nil {
		b.MaxWall = o.MaxTime.Duration
	}
	if o.MaxDisk != nil {
		b.MaxDisk = int64(*o.MaxDisk)
	}
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

// live returns the current settings generation.
func (s *Supervisor) live() *live { return s.cur.Load() }

// build makes a settings generation; it fails on a command or component name that does
// not exist, or a permission pattern that does not parse.
func (s *Supervisor) build(set Settings) (*live, error) {
	if set.Model == "" {
		return nil, fmt.Errorf("agent: no model configured")
	}
	l := &live{Settings: set}
	if err := s.buildPipelines(l); err != nil {
		return nil, err
	}
	var err error
	if l.policy, err = parseRules(set); err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	return l, nil
}

// Reload swaps in new settings. Agents keep running: a step under way finishes with the
// old settings, the next one uses the new. Bad settings are refused and the old ones
// stay. A changed model is probed again before its first prompt.
func (s *Supervisor) Reload(set Settings) error {
	l, err := s.build(set)
	if err != nil {
		return err
	}
	old := s.cur.Swap(l)
	s.opt.LLM.SetLimits(l.limits()) // a new max_context or keep_alive: each model's Load is chosen again
	if old == nil || old.Model != l.Model || old.SmartModel != l.SmartModel {
		s.model.switchTo(l.Model, l.SmartModel)
		select {
		case s.reprobe <- struct{}{}:
		default:
		}
	}
	return nil
}

// Settings returns the settings in use now.
func (s *Supervisor) Settings() Settings { return s.live().Settings }

// ModelSettings returns the model settings in use now, for the team engine's own calls.
func (s *Supervisor) ModelSettings() run.ModelSettings {
	set := s.live().Settings
	return run.ModelSettings{Model: set.Model, MaxContext: set.MaxContext, KeepAlive: set.KeepAlive}
}
