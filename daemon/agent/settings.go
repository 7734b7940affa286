package agent

import (
	"fmt"
	"strings"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/daemon/agent/watchdog"
	"github.com/agentd/agentd/daemon/llm"
	"github.com/agentd/agentd/daemon/run"
)

// Settings are the supervisor's settings that a config reload may change while agents
// run (SIGHUP, agentctl reload). Everything else in Options is fixed for the daemon's life.
type Settings struct {
	Model      string // the fast model
	SmartModel string // optional; thinks again over a step the watchdog caught looping
	MaxContext int    // caps num_ctx
	KeepAlive  *time.Duration

	Directives         api.Directives
	Commands           []string
	ComponentOrder     []string
	DisabledComponents []string
	Agents             map[string]AgentOverrides
	Allow, Deny        []string
	AutoRead           bool

	MaxInvalidReplies int
	Watchdog          watchdog.Config
	ContinuousLimit   int
	Limits            commands.Limits
	HistoryEpisodes   int
}

// settings returns the reloadable part of o, with the defaults New applies.
func (o Options) settings() Settings {
	s := Settings{
		Model: o.Model, SmartModel: o.SmartModel, MaxContext: o.MaxContext, KeepAlive: o.KeepAlive,
		Directives: o.Directives, Commands: o.Commands, ComponentOrder: o.ComponentOrder,
		DisabledComponents: o.DisabledComponents, Agents: o.Agents, Allow: o.Allow, Deny: o.Deny,
		AutoRead: o.AutoRead, MaxInvalidReplies: o.MaxInvalidReplies, Watchdog: o.Watchdog, ContinuousLimit: o.ContinuousLimit,
		Limits: o.Limits, HistoryEpisodes: o.HistoryEpisodes,
	}
	return s.withDefaults()
}

// WithSettings returns o with its reloadable part set from s: the daemon builds both its
// start options and each reload's settings from one Settings, so they cannot differ.
func (o Options) WithSettings(s Settings) Options {
	o.Model, o.SmartModel, o.MaxContext, o.KeepAlive = s.Model, s.SmartModel, s.MaxContext, s.KeepAlive
	o.Directives, o.Commands, o.ComponentOrder, o.DisabledComponents = s.Directives, s.Commands, s.ComponentOrder, s.DisabledComponents
	o.Agents, o.Allow, o.Deny, o.AutoRead = s.Agents, s.Allow, s.Deny, s.AutoRead
	o.MaxInvalidReplies, o.Watchdog, o.ContinuousLimit = s.MaxInvalidReplies, s.Watchdog, s.ContinuousLimit
	o.Limits, o.HistoryEpisodes = s.Limits, s.HistoryEpisodes
	return o
}

func (s Settings) withDefaults() Settings {
	if s.MaxInvalidReplies <= 0 {
		s.MaxInvalidReplies = 3
	}
	if s.ContinuousLimit <= 0 {
		s.ContinuousLimit = 25
	}
	if s.HistoryEpisodes <= 0 {
		s.HistoryEpisodes = 4
	}
	if s.MaxContext <= 0 {
		s.MaxContext = 8192
	}
	if len(s.Commands) == 0 {
		s.Commands = commands.DefaultNames
	}
	return s
}

// live is one generation of settings with what is built from them: the permission rules
// and the component pipelines. A generation is never changed once published; a reload
// publishes a new one. Each loop round of an agent reads the current one once and uses
// it to the end of the round, so a step under way finishes with the settings it began
// with and the next step uses the new ones.
type live struct {
	Settings
	rules          rules
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
	set = set.withDefaults()
	if set.Model == "" {
		return nil, fmt.Errorf("agent: no model configured")
	}
	l := &live{Settings: set}
	if err := s.buildPipelines(l); err != nil {
		return nil, err
	}
	var err error
	if l.rules, err = parseRules(set); err != nil {
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
