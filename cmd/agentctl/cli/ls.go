package cli

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/agentd/agentd/daemon/client"
)

var lsCmd = &command{
	name:  "ls",
	args:  "[--json]",
	short: "list agents and what they are doing",
	long: `Ls lists every agent, oldest first: its id, name, state, how many steps its current run
has taken, and the start of its task. An agent in state awaiting_decision waits for you:
see it with 'agentctl show NAME'.`,
	run: (*app).runLs,
}

const lsTaskMax = 50

func (a *app) runLs(ctx context.Context, args []string) error {
	pos, err := a.parse(a.newFlagSet(), args, -1)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("ls takes no arguments")
	}
	agents, err := a.api().Agents(ctx)
	if err != nil {
		return err
	}
	if a.json {
		if agents == nil {
			agents = []client.Agent{}
		}
		return a.printJSON(agents)
	}
	if len(agents) == 0 {
		a.note("no agents yet: start one with: agentctl run \"TASK\"")
		return nil
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tSTATE\tSTEP\tTASK")
	for _, ag := range agents {
		task := ag.Task
		if task == client.GoalsTask && len(ag.Goals) > 0 { // made with create: its goals are its task
			task = "goals: " + strings.Join(ag.Goals, "; ")
		}
		if task == "" {
			task = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", line(ag.ID), line(ag.Name), line(string(ag.State)), ag.Step, truncate(task, lsTaskMax))
	}
	return tw.Flush()
}
