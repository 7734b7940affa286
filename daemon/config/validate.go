package config

import (
	"fmt"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/commands/mcp"
	"github.com/agentd/agentd/commands/permission"
	"github.com/agentd/agentd/internal/display"
)

// Validate checks every value and returns an *Error listing all problems, or nil.
// Command names are not checked here: the daemon knows which commands exist.
func (c *Config) Validate() error {
	if probs := c.problems(); len(probs) > 0 {
		return &Error{Problems: probs}
	}
	return nil
}

// problems returns what is wrong with c's values, in key order, without lines: each
// section checks its own keys.
func (c *Config) problems() []Problem {
	var probs []Problem
	bad := func(key, format string, args ...any) {
		probs = append(probs, Problem{Key: key, Msg: fmt.Sprintf(format, args...)})
	}
	c.Ollama.problems(bad)
	c.Agent.problems(bad)
	c.Permissions.problems(bad)
	agentProblems(c.Agents, bad)
	c.Schedules.problems(bad)
	c.WebCommands.problems(bad)
	c.Shell.problems(bad)
	c.botProblems(bad)
	c.Discord.problems(bad)
	c.MCP.problems(bad)
	c.Memory.problems(bad)
	c.Checkpoints.problems(bad)
	c.HTTP.problems(bad)
	c.WebConsole.problems(bad)
	c.Teams.problems(bad)
	c.Log.problems(bad)
	// By key, so that the order of the checks and of map iteration does not show.
	sort.SliceStable(probs, func(i, j int) bool { return probs[i].Key < probs[j].Key })
	return probs
}

// problems checks the [ollama] section and its [[ollama.hosts]] tables.
func (o *OllamaConfig) problems(bad func(key, format string, args ...any)) {
	if o.Model == "" {
		bad("ollama.model", "empty; name the model to use, like %q", DefaultModel)
	} else if strings.ContainsAny(o.Model, " \t\n") {
		bad("ollama.model", "%q has spaces; want a model name like %q", o.Model, DefaultModel)
	}
	if strings.ContainsAny(o.SmartModel, " \t\n") {
		bad("ollama.smart_model", "%q has spaces; want a model name like %q", o.SmartModel, "qwen2.5:7b")
	}
	if o.RequestTimeout.Duration <= 0 {
		bad("ollama.request_timeout", "must be more than 0, got %s", o.RequestTimeout)
	}
	if o.MaxContext < minContext {
		bad("ollama.max_context", "must be at least %d tokens, got %d", minContext, o.MaxContext)
	}
	o.hostProblems(bad)
}

// problems checks the [agent] section: what every agent gets unless [agents.NAME] says otherwise.
func (a *AgentConfig) problems(bad func(key, format string, args ...any)) {
	checkNonEmpty("agent.constraints", a.Constraints, bad)
	checkNonEmpty("agent.resources", a.Resources, bad)
	checkNonEmpty("agent.best_practices", a.BestPractices, bad)
	checkNonEmpty("agent.disabled_components", a.DisabledComponents, bad)
	checkCommands(a.Commands, func(msg string) { bad("agent.commands", "%s", msg) })
	for key, n := range map[string]int{
		"agent.max_invalid_replies": a.MaxInvalidReplies, "agent.continuous_limit": a.ContinuousLimit,
		"agent.output_cap": a.OutputCap, "agent.history_episodes": a.HistoryEpisodes,
	} {
		if n < 1 {
			bad(key, "must be at least 1, got %d", n)
		}
	}
	checkWatchdog("agent", &a.WatchdogFailures, &a.WatchdogIdleSteps, bad)
	for key, n := range map[string]int{"agent.max_helper_depth": a.MaxHelperDepth, "agent.max_helpers": a.MaxHelpers} {
		if n < 1 || n > 10 {
			bad(key, "must be between 1 and 10, got %d", n)
		}
	}
	checkBudget("agent", &a.MaxSteps, &a.MaxTokens, &a.MaxTime, bad)
	if a.CommandTimeout.Duration <= 0 {
		bad("agent.command_timeout", "must be more than 0, got %s", a.CommandTimeout)
	}
	if a.WorkspaceRoot != "" && !filepath.IsAbs(a.WorkspaceRoot) {
		bad("agent.workspace_root", "%q is not an absolute path", a.WorkspaceRoot)
	}
}

// checkBudget checks the budget bounds in section sec; a nil one is not set.
func checkBudget(sec string, steps *int, tokens *int64, maxTime *Duration, bad func(key, format string, args ...any)) {
	if steps != nil && *steps < 0 {
		bad(sec+".max_steps", "must be 0 (no bound) or more, got %d", *steps)
	}
	if tokens != nil && *tokens < 0 {
		bad(sec+".max_tokens", "must be 0 (no bound) or more, got %d", *tokens)
	}
	if maxTime != nil && maxTime.Duration < 0 {
		bad(sec+".max_time", "must be 0 (no bound) or more, got %s", *maxTime)
	}
}

// checkNonEmpty reports the empty items of a list at key.
func checkNonEmpty(key string, list []string, bad func(key, format string, args ...any)) {
	for i, s := range list {
		if strings.TrimSpace(s) == "" {
			bad(key, "item %d is empty", i+1)
		}
	}
}

// checkPatterns reports the items of a list at key that are no permission pattern.
func checkPatterns(key string, list []string, bad func(key, format string, args ...any)) {
	for i, s := range list {
		if _, err := permission.Parse(s); err != nil {
			bad(key, "item %d: %v", i+1, err)
		}
	}
}

// problems checks the [permissions] patterns.
func (p *PermissionsConfig) problems(bad func(key, format string, args ...any)) {
	checkPatterns("permissions.allow", p.Allow, bad)
	checkPatterns("permissions.deny", p.Deny, bad)
}

// agentProblems checks the [agents.NAME] tables, each over what [agent] sets.
func agentProblems(agents map[string]AgentOverride, bad func(key, format string, args ...any)) {
	for _, name := range sortedKeys(agents) {
		o := agents[name]
		key := "agents." + name
		if !agentNameRE.MatchString(name) {
			bad(key, "%q is not an agent name (lowercase letters, digits, - and _)", name)
		}
		if o.Commands != nil {
			checkCommands(o.Commands, func(msg string) { bad(key+".commands", "%s", msg) })
		}
		checkNonEmpty(key+".disabled_components", o.DisabledComponents, bad)
		checkPatterns(key+".allow", o.Allow, bad)
		checkPatterns(key+".deny", o.Deny, bad)
		checkBudget(key, o.MaxSteps, o.MaxTokens, o.MaxTime, bad)
		checkWatchdog(key, o.WatchdogFailures, o.WatchdogIdleSteps, bad)
	}
}

// problems checks the [schedules] section.
func (s *SchedulesConfig) problems(bad func(key, format string, args ...any)) {
	if g := s.Grace.Duration; g < time.Second || g > time.Hour {
		bad("schedules.grace", "must be between 1s and 1h, got %s", s.Grace)
	}
	if k := s.KeepAgents; k < 0 {
		bad("schedules.keep_agents", "must be 0 (keep all) or more, got %d", k)
	}
}

// problems checks the [log] section.
func (l *LogConfig) problems(bad func(key, format string, args ...any)) {
	if !slices.Contains([]string{"debug", "info", "warn", "error"}, l.Level) {
		bad("log.level", "%q is not one of debug, info, warn, error", l.Level)
	}
	if !slices.Contains([]string{"text", "json"}, l.Format) {
		bad("log.format", "%q is not one of text, json", l.Format)
	}
}

// minContext is the smallest num_ctx worth running: the first prompt alone is ~700 tokens.
const minContext = 1024

// checkURL says what is wrong with an Ollama host as ParseOllamaHost reads it, or "".
func checkURL(s string) string {
	if _, err := api.ParseOllamaHost(s); err != nil || strings.TrimSpace(s) == "" {
		return fmt.Sprintf("%q is not a URL like %q", s, DefaultOllamaHost)
	}
	return ""
}

// maxSlots bounds a host's slots: Ollama's own OLLAMA_NUM_PARALLEL rarely goes past 16.
const maxSlots = 64

// hostProblems checks the [[ollama.hosts]] tables.
func (o *OllamaConfig) hostProblems(bad func(key, format string, args ...any)) {
	seen := map[string]int{}
	servesModel := len(o.Hosts) == 0
	for i, h := range o.Hosts {
		key := fmt.Sprintf("ollama.hosts.%d", i+1)
		if msg := checkURL(h.URL); msg != "" {
			bad(key, "url %s", msg)
		} else if u, _ := api.ParseOllamaHost(h.URL); seen[u.String()] > 0 {
			bad(key, "url %q is host %d too: list each server once and give it more slots instead", h.URL, seen[u.String()])
		} else {
			seen[u.String()] = i + 1
		}
		if h.Slots < 0 || h.Slots > maxSlots {
			bad(key, "slots must be between 1 and %d (the server's OLLAMA_NUM_PARALLEL; unset is 1), got %d", maxSlots, h.Slots)
		}
		for j, m := range h.Models {
			if strings.TrimSpace(m) == "" || strings.ContainsAny(m, " \t\n") {
				bad(key, "models item %d: %q is not a model name like %q", j+1, m, DefaultModel)
			}
		}
		if len(h.Models) == 0 || slices.Contains(h.Models, o.Model) || slices.Contains(h.Models, o.Model+":latest") {
			servesModel = true
		}
	}
	if !servesModel && o.Model != "" {
		bad("ollama.hosts", "no host serves ollama.model %q: add it to one host's models, or leave a host's models out so it serves what it has", o.Model)
	}
}

func checkCommands(cmds []string, bad func(string)) {
	if len(cmds) == 0 {
		bad(`empty; agents need at least "ask_user" and "finish"`)
	}
	seen := map[string]bool{}
	for i, name := range cmds {
		switch {
		case strings.TrimSpace(name) == "":
			bad(fmt.Sprintf("item %d is empty", i+1))
		case seen[name]:
			bad(fmt.Sprintf("%q is listed twice", name))
		}
		seen[name] = true
	}
}

// suggestKey returns ` (did you mean "x.y"?)` for an unknown key in section sec ("" at
// the top level): the same key in another section, or a known key a typo away.
func (d *decoder) suggestKey(sec, key string) string {
	for _, s := range sortedKeys(d.fields) {
		if _, ok := d.fields[s][key]; ok && s != sec {
			return fmt.Sprintf(" (did you mean %q?)", s+"."+key)
		}
	}
	if best := display.Closest(key, sortedKeys(d.fields[sec])); best != "" {
		return fmt.Sprintf(" (did you mean %q?)", sec+"."+best)
	}
	return ""
}

func (d *decoder) suggestSection(name string) string {
	if best := display.Closest(name, sortedKeys(d.fields)); best != "" {
		return fmt.Sprintf(" (did you mean [%s]?)", best)
	}
	return ""
}

// agentNameRE is what an agent name may be (the daemon's own rule).
var agentNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,39}$`)

// problems checks the [web_commands] section.
func (w *WebCommandsConfig) problems(bad func(key, format string, args ...any)) {
	if w.SearxngURL != "" {
		if u, err := url.Parse(w.SearxngURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("web_commands.searxng_url", "%q is not a URL like %q", w.SearxngURL, "http://127.0.0.1:8888")
		}
	}
	if w.MaxPageBytes < 1024 {
		bad("web_commands.max_page_bytes", "must be at least 1024, got %d", w.MaxPageBytes)
	}
	if w.Timeout.Duration <= 0 {
		bad("web_commands.timeout", "must be more than 0, got %s", w.Timeout)
	}
}

// problems checks the [shell] section: the sandbox and its limits.
func (sh *ShellConfig) problems(bad func(key, format string, args ...any)) {
	if !slices.Contains([]string{"auto", "bwrap", "none"}, sh.Sandbox) {
		bad("shell.sandbox", "%q is not one of auto, bwrap, none", sh.Sandbox)
	}
	for i, id := range []int{sh.UID, sh.GID} {
		if id <= 0 || id > 1<<31-1 {
			bad([]string{"shell.uid", "shell.gid"}[i], "%d is not an unprivileged id: the sandbox runs programs as one, like 65534 (nobody), never 0 (root)", id)
		}
	}
	if p := sh.Procs; p < 16 || p > 1<<22 {
		bad("shell.procs", "must be between 16 and %d, got %d: each command's sandbox needs a few processes of its own", 1<<22, p)
	}
	if m := sh.Memory; m < 64<<20 {
		bad("shell.memory", "must be at least 64 MiB, got %s: programs need room to start (the sandbox, a shell, python)", display.Size(int64(m)))
	}
	if p := sh.CPUPercent; p != 0 && (p < 10 || p > 100*1024) {
		bad("shell.cpu_percent", "must be 0 (no cap) or between 10 and %d (percent of one CPU: 150 is one and a half), got %d", 100*1024, p)
	}
	for i, v := range sh.Env {
		if !envNameRE.MatchString(v) {
			bad("shell.env", "item %d: %q is not an environment variable name", i+1, v)
		}
	}
}

// problems checks the [[mcp.servers]] tables: each valid, each name once.
func (m *MCPConfig) problems(bad func(key, format string, args ...any)) {
	var servers []mcp.ServerConfig
	for _, s := range m.Servers {
		servers = append(servers, s.ServerConfig())
	}
	for i, s := range servers {
		if err := s.Validate(); err != nil {
			bad(fmt.Sprintf("mcp.servers.%d", i+1), "%v", err)
		}
		for j := range i {
			if servers[j].Name == s.Name && s.Name != "" {
				bad(fmt.Sprintf("mcp.servers.%d", i+1), "name %q is used by server %d too", s.Name, j+1)
			}
		}
	}
}

var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// ServerConfig converts the table to the MCP bridge's config.
func (s MCPServer) ServerConfig() mcp.ServerConfig {
	return mcp.ServerConfig{Name: s.Name, Command: s.Command, Env: s.Env, URL: s.URL, Timeout: s.Timeout.Duration}
}

var slackIDRE = regexp.MustCompile(`^[A-Z][A-Z0-9]{2,}$`)

// botProblems checks the [bots] and [slack] sections.
func (c *Config) botProblems(bad func(key, format string, args ...any)) {
	if c.Bots.ApproveCount < 0 || c.Bots.ApproveCount > 1000 {
		bad("bots.approve_count", "must be 0 to 1000, got %d", c.Bots.ApproveCount)
	}
	if c.Bots.DecisionExpiry.Duration < 0 {
		bad("bots.decision_expiry", "cannot be negative, got %s", c.Bots.DecisionExpiry)
	}
	s := &c.Slack
	checkIDs := func(key string, ids []string, want string) {
		for i, id := range ids {
			if !slackIDRE.MatchString(id) || !strings.ContainsRune(want, rune(id[0])) {
				bad(key, "item %d: %q is not a Slack id starting with one of %s", i+1, id, want)
			}
		}
	}
	checkIDs("slack.teams", s.Teams, "TE")
	checkIDs("slack.approvers", s.Approvers, "UWS")
	for _, id := range sortedKeys(s.Channels) {
		if !slackIDRE.MatchString(id) || !strings.ContainsRune("CGD", rune(id[0])) {
			bad("slack.channels."+id, "%q is not a Slack channel id (like C0123ABCD)", id)
		}
		checkIDs("slack.channels."+id+".approvers", s.Channels[id].Approvers, "UWS")
	}
	for _, name := range sortedKeys(s.Agents) {
		if !agentNameRE.MatchString(name) {
			bad("slack.agents."+name, "%q is not an agent name (lowercase letters, digits, - and _)", name)
		}
		checkIDs("slack.agents."+name+".approvers", s.Agents[name].Approvers, "UWS")
	}
	checkBot("slack", map[string]string{"bot_token": s.BotTokenEnv, "app_token": s.AppTokenEnv},
		map[string]string{"bot_token": s.BotTokenFile, "app_token": s.AppTokenFile}, s.APIURL, "https://slack.com/api/", bad)
	if s.Enabled {
		if s.BotTokenEnv == "" && s.BotTokenFile == "" {
			bad("slack.bot_token_env", "the bot needs a token: set bot_token_env or bot_token_file")
		}
		if s.AppTokenEnv == "" && s.AppTokenFile == "" {
			bad("slack.app_token_env", "the bot needs an app-level token: set app_token_env or app_token_file")
		}
		checkServes("slack", len(s.Channels), s.DirectMessages, bad)
	}
}

// checkBot checks what a chat bot's section (sec) says of where its tokens are read
// from, by token (its keys are TOKEN_env and TOKEN_file), and of its API URL.
func checkBot(sec string, envs, files map[string]string, apiURL, example string, bad func(key, format string, args ...any)) {
	for tok, v := range envs {
		if v != "" && !envNameRE.MatchString(v) {
			bad(sec+"."+tok+"_env", "%q is not an environment variable name", v)
		}
	}
	for tok, v := range files {
		if v != "" && !filepath.IsAbs(v) {
			bad(sec+"."+tok+"_file", "%q is not an absolute path", v)
		}
	}
	if u, err := url.Parse(apiURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || !strings.HasSuffix(apiURL, "/") {
		bad(sec+".api_url", "%q is not a URL ending in /, like %q", apiURL, example)
	}
}

// checkServes reports an enabled bot that serves no channel and no direct messages.
func checkServes(sec string, channels int, dm bool, bad func(key, format string, args ...any)) {
	if channels == 0 && !dm {
		bad(sec+".channels", "the bot serves nothing: add a [%s.channels.ID] table or set direct_messages = true", sec)
	}
}

// Bounds of the watchdog's thresholds: one failure or a couple of quiet steps are no
// loop, and a bound past a whole run's length stops nothing.
const (
	minWatchdogFailures, maxWatchdogFailures = 2, 50
	minWatchdogIdle, maxWatchdogIdle         = 3, 200
)

// checkWatchdog checks the watchdog's thresholds in section sec; a nil one is not set.
func checkWatchdog(sec string, failures, idle *int, bad func(key, format string, args ...any)) {
	if failures != nil && (*failures < minWatchdogFailures || *failures > maxWatchdogFailures) {
		bad(sec+".watchdog_failures", "must be between %d and %d (the same command failing the same way that many times in a row is a loop), got %d",
			minWatchdogFailures, maxWatchdogFailures, *failures)
	}
	if idle != nil && (*idle < minWatchdogIdle || *idle > maxWatchdogIdle) {
		bad(sec+".watchdog_idle_steps", "must be between %d and %d (that many steps in a row that change nothing are a loop), got %d",
			minWatchdogIdle, maxWatchdogIdle, *idle)
	}
}
