package server

import (
	"fmt"
	"slices"
	"strings"

	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/daemon/agent"
	"github.com/agentd/agentd/daemon/config"
)

// CheckConfig finds what the config package cannot check alone, without starting
// anything: command names against the command registry, and component names against the
// components this config would give agents. agentd --check-config and every reload use it
// through config.LoadWith, so each problem is reported at its line.
func CheckConfig(cfg *config.Config) []config.Problem {
	var probs []config.Problem
	bad := func(key, format string, args ...any) {
		probs = append(probs, config.Problem{Key: key, Msg: fmt.Sprintf(format, args...)})
	}
	checkCommands := func(key string, names []string) {
		for i, n := range names {
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
	extra := componentsOf(cfg)
	checkComps := func(key string, names []string, disabling bool) {
		for i, n := range names {
			if strings.TrimSpace(n) == "" {
				continue // config reports empty items
			}
			if err := agent.CheckComponents(extra, []string{n}, disabling); err != nil {
				bad(key, "item %d: %v", i+1, err)
			}
		}
	}
	checkCommands("agent.commands", cfg.Agent.Commands)
	checkComps("agent.disabled_components", cfg.Agent.DisabledComponents, true)
	checkComps("agent.component_order", cfg.Agent.ComponentOrder, false)
	for _, name := range sortedNames(cfg.Agents) {
		o := cfg.Agents[name]
		checkCommands("agents."+name+".commands", o.Commands)
		checkComps("agents."+name+".disabled_components", o.DisabledComponents, true)
	}
	return probs
}

// componentsOf stands in for the components Run builds from cfg (components.go), by name
// only: checking needs no network, sandbox or MCP server.
func componentsOf(cfg *config.Config) []commands.Component {
	var out []commands.Component
	if cfg.Web.Enabled {
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

func knownCommands() []string {
	var names []string
	for _, c := range commands.All() {
		names = append(names, c.Spec().Name)
	}
	return names
}

func sortedNames[V any](m map[string]V) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
