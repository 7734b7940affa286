package server

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/daemon/agent"
	"github.com/agentd/agentd/daemon/config"
)

// CheckConfig finds what the config package cannot check alone, without starting
// anything: command names against the command registry, and component names against the
// components this config would give agents. agentd --check-config and every reload use it
// through config.Load, so each problem is reported at its line.
func CheckConfig(cfg *config.Config) []config.Problem {
	var probs []config.Problem
	bad := func(key, format string, args ...any) {
		probs = append(probs, config.Problem{Key: key, Msg: fmt.Sprintf(format, args...)})
	}
	extra := componentsOf(cfg)
	checkCommands := func(key string, names []string, disabled []string) {
		for i, n := range names {
			if comp := agent.ComponentCommands[n]; comp != "" {
				msg := componentCommandProblem(n, comp, extra, disabled)
				if msg == "" && n == "web_search" && cfg.WebCommands.SearxngURL == "" && !cfg.WebCommands.DuckDuckGo {
					msg = `"web_search" needs a search engine: set searxng_url or duckduckgo = true in [web_commands], or drop "web_search" from the list`
				}
				if msg != "" {
					bad(key, "item %d: %s", i+1, msg)
				}
				continue
			}
			if _, ok := commands.Lookup(n); !ok && strings.TrimSpace(n) != "" {
				bad(key, "item %d: no command is named %q; commands: %s", i+1, n, strings.Join(knownCommands(), ", "))
			}
		}
		for _, need := range []string{commands.Finish, commands.AskUser} {
			if len(names) > 0 && !slices.Contains(names, need) {
				bad(key, "must include %q, or agents cannot finish or ask", need)
			}
		}
	}
	checkComps := func(key string, names []string) {
		for i, n := range names {
			if strings.TrimSpace(n) == "" {
				continue // config reports empty items
			}
			if err := agent.CheckComponents(extra, []string{n}); err != nil {
				bad(key, "item %d: %v", i+1, err)
			}
		}
	}
	checkCommands("agent.commands", cfg.Agent.Commands, cfg.Agent.DisabledComponents)
	checkComps("agent.disabled_components", cfg.Agent.DisabledComponents)
	for _, name := range slices.Sorted(maps.Keys(cfg.Agents)) {
		o := cfg.Agents[name]
		checkCommands("agents."+name+".commands", o.Commands, append(slices.Clone(cfg.Agent.DisabledComponents), o.DisabledComponents...))
		checkComps("agents."+name+".disabled_components", o.DisabledComponents)
	}
	return probs
}

// componentsOf stands in for the components Run builds from cfg (components.go), by name
// only: checking needs no network, sandbox or MCP server.
func componentsOf(cfg *config.Config) []commands.Component {
	var out []commands.Component
	if cfg.WebCommands.Enabled {
		out = append(out, commands.CommandList{ID: "web"})
	}
	if cfg.Shell.Enabled {
		out = append(out, commands.CommandList{ID: "shell"})
	}
	if len(cfg.MCP.Servers) > 0 {
		out = append(out, commands.CommandList{ID: "mcp"})
	}
	return out
}

// componentCommandProblem says why command n, offered by component comp, would not be
// offered with this config, naming what turns it on; "" when it is offered.
func componentCommandProblem(n, comp string, extra []commands.Component, disabled []string) string {
	on := comp == "context" || slices.ContainsFunc(extra, func(c commands.Component) bool { return c.Name() == comp })
	switch {
	case !on:
		section := comp
		if comp == "web" {
			section = "web_commands" // the web component's section
		}
		return fmt.Sprintf("%q is offered by [%s] when it is on: set enabled = true in [%s], or drop %q from the list", n, section, section, n)
	case slices.Contains(disabled, comp):
		return fmt.Sprintf("%q is offered by the %s component, which disabled_components turns off: remove %q from disabled_components, or drop %q from the list", n, comp, comp, n)
	}
	return ""
}

func knownCommands() []string {
	var names []string
	for _, c := range commands.All() {
		names = append(names, c.Spec().Name)
	}
	return names
}
