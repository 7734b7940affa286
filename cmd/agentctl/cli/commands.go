package cli

import (
	"cmp"
	"context"
	"fmt"
	"strings"
)

var commandsCmd = &command{
	name:  "commands",
	args:  "[AGENT] [--json]",
	short: "the commands an agent may use, with class and policy",
	long: `Commands lists what the agent may use now, in the order its prompt lists them: each
command's side-effect class (read, write_workspace, network, execute, message), the
component offering it, what happens when the agent proposes it and no permission pattern
matches — ask (a person decides) or allow — and the patterns that can decide it without
asking (deny ones first; whether one matches depends on the proposal's args). Execute
commands always ask unless an allow pattern names them; see agentctl policy.

Without AGENT it lists what a new agent gets from the config file.`,
	run: verb(agentVerbs.runCommands),
}

func (a agentVerbs) runCommands(ctx context.Context, args []string) error {
	pos, err := a.parse(a.newFlagSet(), args, -1)
	if err != nil {
		return err
	}
	if len(pos) > 1 {
		return usagef("too many arguments: want at most one AGENT, got %q", pos)
	}
	ref := ""
	if len(pos) == 1 {
		ref = pos[0]
	}
	list, err := a.api().Commands(ctx, ref)
	if err != nil {
		return agentErr(ref, err)
	}
	if a.json {
		return a.printJSON(list)
	}
	tw := table(a.stdout, "COMMAND\tCLASS\tFROM\tPOLICY\tPATTERNS\tDESCRIPTION")
	for _, c := range list {
		pats := make([]string, len(c.Patterns))
		for i, p := range c.Patterns {
			pats[i] = p.Effect + " " + line(p.Pattern)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", line(c.Name), line(c.Class), line(c.Provider), line(c.Policy), cmp.Or(strings.Join(pats, ", "), "-"), line(c.Description))
	}
	return tw.Flush()
}
