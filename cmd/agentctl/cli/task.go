package cli

import (
	"context"

	"github.com/agentd/agentd/api"
)

var taskCmd = &command{
	name:  "task",
	args:  `AGENT "FOLLOW-UP" [--follow] [--max-steps N] [--max-tokens N] [--max-time D]`,
	short: "give an idle agent its next task",
	long: `Task starts a new run for an idle (or failed) agent. It keeps its profile and its memory
of what it did before, so a follow-up can build on earlier work:

  agentctl task bob "now write the list to todo.md"

An agent that is still working must be stopped first ('agentctl stop AGENT').
With --follow, stay and follow the new run as 'agentctl follow' does.
--max-steps, --max-tokens and --max-time bound the new run: when one runs out the run
ends (outcome budget_exhausted, the reason in 'agentctl show') and the agent goes idle.`,
	run: verb(agentVerbs.runTask),
}

func (a agentVerbs) runTask(ctx context.Context, args []string) error {
	fs := a.newFlagSet()
	follow := fs.Bool("follow", false, "stay and follow the run, deciding on its proposals here")
	var rb runBudgetFlags
	pos, budget, err := rb.parse(a.app, fs, args)
	if err != nil {
		return err
	}
	ref, task, err := agentAndText(pos, "FOLLOW-UP task", "missing FOLLOW-UP: what should agent %s do next?")
	if err != nil {
		return err
	}
	ag, err := api.TaskRoute.Do(ctx, a.api(), ref, api.TaskRequest{Task: task, Budget: budget})
	if err != nil {
		return agentErr(ref, err)
	}
	return a.started(ctx, ag, *follow)
}
