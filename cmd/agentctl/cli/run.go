package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/agentd/agentd/api"
)

var runCmd = &command{
	name:  "run",
	args:  `"TASK" [--follow] [--auto N] [--max-steps N] [--max-tokens N] [--max-time D]`,
	short: "start a new agent on a task",
	long: `Run creates an agent for TASK and starts it. The model writes the agent's name and
profile from the task. Run prints the new agent's id and name and returns; with --follow
it stays and shows each step as it happens, asking you to approve each command here.

With --auto N the agent's first N commands run without asking. Use it only for tasks
you trust; every command still shows in 'agentctl history'.

--max-steps, --max-tokens and --max-time bound the run: when one runs out the run ends
(outcome budget_exhausted, the reason in 'agentctl show') and the agent goes idle.

  agentctl run "find the TODO comments in ~/src/app and list them by file" --follow`,
	run: verb(agentVerbs.runRun),
}

func (a agentVerbs) runRun(ctx context.Context, args []string) error {
	fs := a.newFlagSet()
	follow := fs.Bool("follow", false, "stay and follow the agent, deciding on its proposals here")
	auto := fs.Int("auto", 0, "run the first `N` commands without asking")
	var rb runBudgetFlags
	pos, budget, err := rb.parse(a.app, fs, args)
	if err != nil {
		return err
	}
	task := strings.TrimSpace(strings.Join(pos, " "))
	if task == "" {
		return usagef("missing TASK: what should the agent do?")
	}
	if *auto < 0 {
		return usagef("--auto %d: N must be 0 or more", *auto)
	}
	req := api.CreateAgentRequest{Task: task, Budget: budget}
	if *auto > 0 {
		req.Policy = &api.Policy{Mode: "auto", AutoSteps: *auto}
	}
	ag, err := api.CreateAgentRoute.Do(ctx, a.api(), "", req)
	if err != nil {
		return err
	}
	return a.started(ctx, ag, *follow)
}

// started reports an agent that just began a run, then follows it if asked.
func (a agentVerbs) started(ctx context.Context, ag *api.Agent, follow bool) error {
	switch {
	case a.json && follow:
		// stdout carries only the event stream
	case a.json:
		return a.printJSON(ag)
	case ag.Name != "":
		fmt.Fprintf(a.stdout, "%s %s\n", ag.ID, ag.Name)
	default:
		fmt.Fprintln(a.stdout, ag.ID)
	}
	if !follow {
		a.note("follow it with: agentctl follow %s", refOf(ag))
		return nil
	}
	return decisionVerbs{a.app}.follow(ctx, ag.ID, false, ag.RunID)
}
