package cli

import (
	"cmp"
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/agentd/agentd/api"
)

var lsCmd = &command{
	name:  "ls",
	args:  "[--json]",
	short: "list agents and what they are doing",
	long: `Ls lists every agent, oldest first: its id, name, state, how many steps its current run
has taken, and the start of its task. An agent in state awaiting_decision waits for you:
see it with 'agentctl show NAME'.

It prints as it reads: with thousands of agents the first rows show at once, and the
columns are aligned for each ` + strconv.Itoa(api.ListPage) + ` rows. --json prints every agent
with everything the API shows of it (its pending proposal whole), as one JSON array.`,
	run: verb(agentVerbs.runLs),
}

const lsTaskMax = 50

func (a agentVerbs) runLs(ctx context.Context, args []string) error {
	if err := a.parseNone(args); err != nil {
		return err
	}
	if a.json {
		arr := a.jsonArray()
		if err := a.api().EachAgent(ctx, api.AgentQuery{}, func(ag api.Agent) error { return arr.add(ag) }); err != nil {
			return err
		}
		return arr.close()
	}
	tw := table(a.stdout)
	n := 0
	err := a.api().EachAgent(ctx, api.AgentQuery{Brief: true}, func(ag api.Agent) error {
		if n == 0 {
			fmt.Fprintln(tw, "ID\tNAME\tSTATE\tSTEP\tTASK")
		}
		n++
		if n%api.ListPage == 0 { // these rows show while the daemon reads the next
			defer tw.Flush()
		}
		task := ag.Task
		if task == api.GoalsTask && len(ag.Goals) > 0 { // made with create: its goals are its task
			task = "goals: " + strings.Join(ag.Goals, "; ")
		}
		state := string(ag.State)
		if ag.Unchecked != "" { // `agentctl show` says what
			state += " (unchecked change)"
		}
		_, err := fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", line(ag.ID), line(ag.Name), line(state), ag.Step, truncate(cmp.Or(task, "-"), lsTaskMax))
		return err
	})
	if err != nil {
		tw.Flush() // what was read shows before the error
		return err
	}
	if n == 0 {
		a.note("no agents yet: start one with: agentctl run \"TASK\"")
		return nil
	}
	return tw.Flush()
}
