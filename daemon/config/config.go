// Package config is agentd's configuration: the TOML file (agentd.example.toml in the
// repository documents every key), its defaults and its checks, and the default paths.
//
// cmd/agentd loads it once at start with Load, lets its flags override StateDir and
// Socket, and hands the values to the daemon's packages as their own Options; nothing else
// reads the file. A bad file is refused as a whole, with every problem listed by line.
package config

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/daemon/run"
	"github.com/agentd/agentd/internal/display"
)

// DefaultModel is the model agents use unless the config names another: a 3B instruct
// model (about 2 GB) that runs on a CPU, follows a JSON schema well and has a 32k context.
const DefaultModel = "qwen2.5:3b"

// DefaultOllamaHost is where Ollama listens unless $OLLAMA_HOST or the config says otherwise.
const DefaultOllamaHost = api.DefaultOllamaHost

// Config is the whole configuration. The toml tags are the file's keys.
type Config struct {
	Ollama      OllamaConfig      `toml:"ollama"`
	Agent       AgentConfig       `toml:"agent"`
	Permissions PermissionsConfig `toml:"permissions"`
	// Agents are per-agent settings, [agents.NAME], applied to the agent with that name.
	Agents map[string]AgentOverride `toml:"agents"`
	// WebCommands are the agents' web commands; [web_console] is the browser console.
	WebCommands WebCommandsConfig `toml:"web_commands"`
	Shell       ShellConfig       `toml:"shell"`
	MCP         MCPConfig         `toml:"mcp"`
	// Schedules configures the cron schedules; the schedules themselves live in
	// the store and are managed with `agentctl schedule`.
	Schedules SchedulesConfig `toml:"schedules"`
	// Teams configures team runs started from chat (/agent team).
	Teams  TeamsConfig  `toml:"teams"`
	Memory MemoryConfig `toml:"memory"`
	// Checkpoints keeps each step's workspace checkpoint for agentctl diff and rewind.
	Checkpoints CheckpointsConfig `toml:"checkpoints"`
	Bots        BotsConfig        `toml:"bots"`
	Slack       SlackConfig       `toml:"slack"`
	Discord     DiscordConfig     `toml:"discord"`
	// HTTP is the optional TCP listener: metrics and the Agent Protocol.
	HTTP HTTPConfig `toml:"http"`
	// WebConsole is the browser console on 127.0.0.1 (daemon/web).
	WebConsole WebConsoleConfig `toml:"web_console"`
	Log        LogConfig        `toml:"log"`

	// StateDir holds the database, the memory index and the workspaces. Set by flag only.
	StateDir string `toml:"-"`
	// Socket is the local API's unix socket. Set by flag only.
	Socket string `toml:"-"`
}

// OllamaConfig is the [ollama] section: the model server and the models.
type OllamaConfig struct {
	// HostFrom says where Hosts came from, for the hints people get when they do not
	// answer: HostFromConfig, HostFromEnv ($OLLAMA_HOST) or HostFromDefault.
	HostFrom string `toml:"-"`
	// Model is the model every step uses.
	Model string `toml:"model"`
	// SmartModel, when set, thinks again over a step the watchdog caught going round a
	// loop, before a person is asked.
	SmartModel string `toml:"smart_model"`
	// RequestTimeout bounds one model call, including loading the model.
	RequestTimeout Duration `toml:"request_timeout"`
	// MaxContext caps num_ctx, in tokens; the model's own context length is probed too.
	MaxContext int `toml:"max_context"`
	// KeepAlive is how long Ollama keeps the model loaded after a call; nil leaves it to
	// Ollama (5m), negative keeps it loaded, 0 unloads at once.
	KeepAlive *Duration `toml:"keep_alive"`
	// Hosts are the Ollama servers: each call goes to one that is up and has the model,
	// the least busy first; the daemon queues the rest itself, people's agents first.
	// Default: one, $OLLAMA_HOST (in any form Ollama accepts), else DefaultOllamaHost.
	Hosts []OllamaHost `toml:"hosts"`
}

// OllamaHost is one [[ollama.hosts]] table: one Ollama server of the pool.
type OllamaHost struct {
	// URL is the server's address, in any form OLLAMA_HOST takes.
	URL string `toml:"url"`
	// Models, when set, are the only models sent there; empty means the ones it has
	// (its /api/tags, re-read every minute).
	Models []string `toml:"models"`
	// Slots is how many calls it serves at once (its OLLAMA_NUM_PARALLEL); default 1.
	Slots int `toml:"slots"`
}

// PoolHosts returns the Ollama servers calls go to: a host's Slots left at 0 is 1.
func (o *OllamaConfig) PoolHosts() []OllamaHost {
	out := make([]OllamaHost, len(o.Hosts))
	for i, h := range o.Hosts {
		out[i] = h
		out[i].Slots = max(1, h.Slots)
	}
	return out
}

// AgentConfig is the [agent] section: what every agent gets and the limits it works in.
type AgentConfig struct {
	// Constraints, Resources and BestPractices are the base directives in every prompt.
	// Keep them few and short: they are sent on every step.
	Constraints   []string `toml:"constraints"`
	Resources     []string `toml:"resources"`
	BestPractices []string `toml:"best_practices"`
	// Commands are the commands agents may use, in prompt order.
	Commands []string `toml:"commands"`
	// MaxInvalidReplies pauses an agent after this many unusable model replies in a row.
	MaxInvalidReplies int `toml:"max_invalid_replies"`
	// WatchdogFailures and WatchdogIdleSteps are the loop watchdog's thresholds: the same
	// command failing with the same class of error this many times in a row, and this
	// many steps in a row that change nothing and learn nothing new, are loops.
	WatchdogFailures  int `toml:"watchdog_failures"`
	WatchdogIdleSteps int `toml:"watchdog_idle_steps"`
	// ContinuousLimit is how many steps a continuous-mode run takes without asking.
	ContinuousLimit int `toml:"continuous_limit"`
	// EffectPreview runs a proposed shell or python command ahead, on a copy of the
	// workspace with the network off, to show its change before a person decides;
	// approving applies that change. [agents.NAME] may set it for one agent.
	EffectPreview bool `toml:"effect_preview"`
	// CommandTimeout bounds one command's execution.
	CommandTimeout Duration `toml:"command_timeout"`
	// OutputCap is how many bytes of a command's output are kept and shown to the model.
	OutputCap int `toml:"output_cap"`
	// WorkspaceRoot holds one workspace directory per agent; "" means <StateDir>/workspaces.
	WorkspaceRoot string `toml:"workspace_root"`
	// HistoryEpisodes is how many recent episodes the prompt shows in full; older ones
	// get one line each.
	HistoryEpisodes int `toml:"history_episodes"`
	// DisabledComponents leaves components out of every agent (e.g. "clock", "context").
	DisabledComponents []string `toml:"disabled_components"`
	// MaxHelperDepth bounds how deep helper agents (start_agent) nest: 1 lets the agents
	// people start have helpers, 2 lets those helpers have their own.
	MaxHelperDepth int `toml:"max_helper_depth"`
	// MaxHelpers bounds how many helper agents one agent keeps at once.
	MaxHelpers int `toml:"max_helpers"`
	// MaxSteps, MaxTokens and MaxTime bound each agent over all its runs (MaxTime is
	// its busy time: thinking and executing); 0 is no bound. An agent that reaches one
	// pauses until `agentctl budget` raises it.
	MaxSteps  int      `toml:"max_steps"`
	MaxTokens int64    `toml:"max_tokens"`
	MaxTime   Duration `toml:"max_time"`
	// MaxDisk bounds each agent's workspace on disk (its helpers' inside it included),
	// measured after each command that may write; 0 is no bound. An agent over it pauses
	// until files are removed or `agentctl budget` raises it.
	MaxDisk Size `toml:"max_disk"`
}

// SchedulesConfig is the [schedules] section.
type SchedulesConfig struct {
	// Grace is how late a firing may start and still count as on time; a later one (the
	// daemon was down, the machine asleep) is missed and handled by the schedule's
	// missed-run policy.
	Grace Duration `toml:"grace"`
	// KeepAgents is how many finished agents each template schedule keeps (one is made
	// per run); older ones are removed with their workspaces when a run ends. 0 keeps all.
	KeepAgents int `toml:"keep_agents"`
}

// PermissionsConfig is the [permissions] section: patterns `command(glob)` that allow or
// deny proposals without asking, for every agent.
type PermissionsConfig struct {
	Allow []string `toml:"allow"`
	Deny  []string `toml:"deny"`
	// AutoRead lets read-class commands (read_file, list_folder, search_files...) run
	// without asking.
	AutoRead bool `toml:"auto_read"`
}

// AgentOverride is one [agents.NAME] table.
type AgentOverride struct {
	Commands           []string `toml:"commands"`
	DisabledComponents []string `toml:"disabled_components"`
	Allow              []string `toml:"allow"`
	Deny               []string `toml:"deny"`
	// MaxSteps, MaxTokens, MaxTime and MaxDisk replace [agent]'s budget for this agent;
	// unset ones keep [agent]'s.
	MaxSteps  *int      `toml:"max_steps"`
	MaxTokens *int64    `toml:"max_tokens"`
	MaxTime   *Duration `toml:"max_time"`
	MaxDisk   *Size     `toml:"max_disk"`
	// WatchdogFailures and WatchdogIdleSteps replace [agent]'s for this agent.
	WatchdogFailures  *int `toml:"watchdog_failures"`
	WatchdogIdleSteps *int `toml:"watchdog_idle_steps"`
	// EffectPreview replaces [agent]'s for this agent.
	EffectPreview *bool `toml:"effect_preview"`
}

// WebCommandsConfig is the [web_commands] section: web_search, read_webpage and
// clone_repository.
type WebCommandsConfig struct {
	// Enabled offers the web commands; false leaves them out of every prompt.
	Enabled bool `toml:"enabled"`
	// SearxngURL is a SearxNG instance's base URL (its JSON API must be enabled): the
	// local-first search backend.
	SearxngURL string `toml:"searxng_url"`
	// DuckDuckGo searches DuckDuckGo's HTML page when SearxNG is unset or fails.
	DuckDuckGo bool `toml:"duckduckgo"`
	// AllowPrivate lets read_webpage and clone_repository reach loopback, private and
	// other non-public addresses (commands/netguard decides which those are).
	AllowPrivate bool `toml:"allow_private"`
	// MaxPageBytes caps a fetched page; Timeout caps one fetch.
	MaxPageBytes int      `toml:"max_page_bytes"`
	Timeout      Duration `toml:"timeout"`
	// Clone offers clone_repository (needs git).
	Clone bool `toml:"clone"`
}

// ShellConfig is the [shell] section: execute_shell and execute_python_file.
type ShellConfig struct {
	// Enabled offers the commands; they always ask unless an allow pattern matches.
	Enabled bool `toml:"enabled"`
	// Sandbox is auto (bubblewrap when it works, else the commands are refused), bwrap
	// (required: agentd does not start without it) or none (unconfined, knowingly).
	Sandbox string `toml:"sandbox"`
	// Network gives sandboxed programs the internet through slirp4netns, in a network
	// namespace of their own: not the host's loopback services nor its abstract sockets.
	Network bool `toml:"network"`
	// UID and GID are who sandboxed programs run as when agentd runs as root.
	UID int `toml:"uid"`
	GID int `toml:"gid"`
	// Env names variables passed through from agentd's environment.
	Env []string `toml:"env"`
	// Python offers execute_python_file when python3 exists.
	Python bool `toml:"python"`
	// Procs, Memory and CPUPercent bound each agent's programs together, in a cgroup of
	// the agent's own: processes and threads, memory (swap included), and CPU time in
	// percent of one CPU (0: no cap beyond an equal share). Without cgroups, Procs and
	// Memory are bounds per process (see agentctl doctor).
	Procs      int  `toml:"procs"`
	Memory     Size `toml:"memory"`
	CPUPercent int  `toml:"cpu_percent"`
}

// MCPConfig is the [mcp] section.
type MCPConfig struct {
	Servers []MCPServer `toml:"servers"`
}

// MCPServer is one [[mcp.servers]] table: a stdio command or a streamable HTTP URL.
type MCPServer struct {
	Name    string            `toml:"name"`
	Command []string          `toml:"command"`
	Env     map[string]string `toml:"env"`
	URL     string            `toml:"url"`
	Timeout Duration          `toml:"timeout"`
}

// BotsConfig is the [bots] section: what the chat bots (Slack, Discord) share.
type BotsConfig struct {
	// ApproveCount is N on the "Approve ×N" button; below 2 the button is left out.
	ApproveCount int `toml:"approve_count"`
	// DecisionExpiry, when more than 0, closes a proposal to chat decisions this long
	// after it was made; the agent keeps waiting and agentctl can still decide.
	DecisionExpiry Duration `toml:"decision_expiry"`
}

// SlackConfig is the [slack] section: the Slack bot (Socket Mode; no public URL).
type SlackConfig struct {
	Enabled bool `toml:"enabled"`
	// BotTokenEnv / BotTokenFile name where the bot token (xoxb-…) is read from; a file
	// wins over the variable. AppTokenEnv / AppTokenFile do the same for the app-level
	// token (xapp-…, scope connections:write). The tokens themselves never go in this file.
	BotTokenEnv  string `toml:"bot_token_env"`
	BotTokenFile string `toml:"bot_token_file"`
	AppTokenEnv  string `toml:"app_token_env"`
	AppTokenFile string `toml:"app_token_file"`
	// Teams are the workspace ids (T…) served; empty serves the token's own workspace.
	Teams []string `toml:"teams"`
	// Approvers may decide, start runs and stop agents: user ids (U…, W…) and user
	// group ids (S…). Nobody may when it is empty.
	Approvers []string `toml:"approvers"`
	// DirectMessages serves direct messages to the bot.
	DirectMessages bool `toml:"direct_messages"`
	// Channels are the channels served, by id, each with approvers of its own
	// ([slack.channels.C0123]); an empty list there means Approvers.
	Channels map[string]ChatAccess `toml:"channels"`
	// Agents name approvers for one agent, by agent name ([slack.agents.NAME]).
	Agents map[string]ChatAccess `toml:"agents"`
	// APIURL is Slack's Web API base URL; change it only to test against a fake.
	APIURL string `toml:"api_url"`
}

// ChatAccess is one [slack.channels.ID] or [slack.agents.NAME] table.
type ChatAccess struct {
	Approvers []string `toml:"approvers"`
}

// LogConfig is the [log] section. Logs go to stderr (the journal under systemd).
type LogConfig struct {
	Level  string `toml:"level"`  // debug, info, warn or error
	Format string `toml:"format"` // text or json
}

// Default returns the configuration used when the file is absent or silent.
func Default() *Config {
	return &Config{
		Ollama: OllamaConfig{
			Hosts:          []OllamaHost{{URL: defaultOllamaHost(), Slots: 1}},
			HostFrom:       defaultHostFrom(),
			Model:          DefaultModel,
			RequestTimeout: Duration{10 * time.Minute},
			MaxContext:     8192,
		},
		Agent: AgentConfig{
			Constraints: []string{
				"Use only the commands listed below.",
				"You cannot start background jobs or act outside your workspace.",
				"Ask the user for what you cannot do yourself.",
			},
			Resources: []string{
				"Your own knowledge: use it before searching for information.",
				"The files in your workspace.",
			},
			BestPractices: []string{
				"Reach the goal in as few steps as you can.",
				"Review your past steps and criticize your approach.",
				"Never repeat a command whose result you already have.",
			},
			Commands:           []string{"list_folder", "read_file", "write_file", "ask_user", "finish"},
			MaxInvalidReplies:  3,
			WatchdogFailures:   3,
			WatchdogIdleSteps:  8,
			ContinuousLimit:    25,
			EffectPreview:      true,
			CommandTimeout:     Duration{60 * time.Second},
			OutputCap:          16 << 10,
			HistoryEpisodes:    4,
			DisabledComponents: []string{},
			MaxHelperDepth:     2,
			MaxHelpers:         4,
			MaxDisk:            10 << 30,
		},
		Permissions: PermissionsConfig{Allow: []string{}, Deny: []string{}},
		WebCommands: WebCommandsConfig{Enabled: true, Timeout: Duration{20 * time.Second}, MaxPageBytes: 2 << 20, Clone: true},
		Shell:       ShellConfig{Sandbox: "auto", Python: true, Env: []string{}, UID: 65534, GID: 65534, Procs: 256, Memory: 2 << 30},
		Schedules:   SchedulesConfig{Grace: Duration{time.Minute}, KeepAgents: 10},
		Memory:      defaultMemory(),
		Checkpoints: defaultCheckpoints(),
		Bots:        BotsConfig{ApproveCount: 3},
		Slack: SlackConfig{BotTokenEnv: "SLACK_BOT_TOKEN", AppTokenEnv: "SLACK_APP_TOKEN", Teams: []string{}, Approvers: []string{},
			APIURL: "https://slack.com/api/"},
		Discord:    defaultDiscord(),
		HTTP:       defaultHTTP(),
		WebConsole: defaultWebConsole(),
		Log:        LogConfig{Level: "info", Format: "text"},
		StateDir:   DefaultStateDir(),
		Socket:     api.DefaultSocketPath(),
	}
}

// Directives returns the base directives every agent gets.
func (a *AgentConfig) Directives() api.Directives {
	return api.Directives{Constraints: a.Constraints, Resources: a.Resources, BestPractices: a.BestPractices}
}

// Budget is [agent]'s budget over each agent's runs.
func (a *AgentConfig) Budget() run.Budget {
	return run.Budget{MaxSteps: a.MaxSteps, MaxTokens: a.MaxTokens, MaxWall: a.MaxTime.Duration, MaxDisk: int64(a.MaxDisk)}
}

// Budget is the table's budget over base ([agent]'s): base with the fields it sets
// replaced, or false when it sets none.
func (o AgentOverride) Budget(base run.Budget) (run.Budget, bool) {
	if o.MaxSteps == nil && o.MaxTokens == nil && o.MaxTime == nil && o.MaxDisk == nil {
		return run.Budget{}, false
	}
	var disk *int64
	if o.MaxDisk != nil {
		disk = new(int64(*o.MaxDisk))
	}
	return base.With(o.MaxSteps, o.MaxTokens, o.MaxTime.Ptr(), disk), true
}

// WorkspaceRoot returns the directory that holds the agents' workspaces.
func (c *Config) WorkspaceRoot() string {
	if c.Agent.WorkspaceRoot != "" {
		return c.Agent.WorkspaceRoot
	}
	return filepath.Join(c.StateDir, "workspaces")
}

// Logger returns a logger writing to w in the configured format at level's level, which
// may change later (a reload sets it from log.level); a nil level is the configured one.
func (l LogConfig) Logger(w io.Writer, level *slog.LevelVar) *slog.Logger {
	// Logs show command names, file names and model text: escaped, they cannot forge a
	// line or hide what they say (display.ReplaceAttr).
	opts := &slog.HandlerOptions{Level: l.SlogLevel(), ReplaceAttr: display.ReplaceAttr}
	if level != nil {
		opts.Level = level
	}
	if l.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// SlogLevel returns the configured level; an unknown one (Validate refuses it) is info.
func (l LogConfig) SlogLevel() slog.Level {
	var lvl slog.Level
	if lvl.UnmarshalText([]byte(l.Level)) != nil {
		return slog.LevelInfo
	}
	return lvl
}

// Duration is a time.Duration written in the file as a string like "90s" or "1h30m".
type Duration struct{ time.Duration }

// UnmarshalText parses a Go duration string.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("bad duration %q: want a number and a unit, like \"90s\", \"10m\" or \"1h30m\"", b)
	}
	d.Duration = v
	return nil
}

// MarshalText writes the duration the way UnmarshalText reads it.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// Ptr returns the duration as a *time.Duration, nil for a nil d (an unset optional key).
func (d *Duration) Ptr() *time.Duration {
	if d == nil {
		return nil
	}
	v := d.Duration
	return &v
}

// Size is a number of bytes, written in the file as a string with a unit: "2GiB",
// "512MiB", "10GB", "0".
type Size int64

// UnmarshalText parses a size.
func (z *Size) UnmarshalText(b []byte) error {
	n, err := display.ParseSize(string(b))
	if err != nil {
		return fmt.Errorf("bad %v", err)
	}
	*z = Size(n)
	return nil
}

// MarshalText writes the size the way UnmarshalText reads it, exactly: in the largest
// binary unit that divides it.
func (z Size) MarshalText() ([]byte, error) {
	for _, u := range []struct {
		shift uint
		name  string
	}{{40, "TiB"}, {30, "GiB"}, {20, "MiB"}, {10, "KiB"}} {
		if z != 0 && int64(z)%(1<<u.shift) == 0 {
			return fmt.Appendf(nil, "%d%s", int64(z)>>u.shift, u.name), nil
		}
	}
	return fmt.Appendf(nil, "%d", int64(z)), nil
}

// Where OllamaConfig.Host came from.
const (
	HostFromConfig  = "config"      // [[ollama.hosts]] (or the old [ollama] host) in the file
	HostFromEnv     = "OLLAMA_HOST" // agentd's $OLLAMA_HOST
	HostFromDefault = "default"     // neither: DefaultOllamaHost
)

// defaultHostFrom says where defaultOllamaHost's answer comes from.
func defaultHostFrom() string {
	if os.Getenv("OLLAMA_HOST") == "" {
		return HostFromDefault
	}
	return HostFromEnv
}

// defaultOllamaHost reads $OLLAMA_HOST the way Ollama's own client does (ParseOllamaHost);
// a value it cannot read is kept as written, for Validate to name.
func defaultOllamaHost() string {
	h := os.Getenv("OLLAMA_HOST")
	if h == "" {
		return DefaultOllamaHost
	}
	u, err := api.ParseOllamaHost(h)
	if err != nil {
		return h
	}
	return u.String()
}
