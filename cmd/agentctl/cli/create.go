package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/agentd/agentd/api"
)

var createCmd = &command{
	name:  "create",
	args:  "--name NAME --role ROLE [--goal GOAL]... [--start [--max-steps N] [--max-tokens N] [--max-time D]]",
	short: "create an agent from a name, role and goals",
	long: `Create makes an agent with the profile you write instead of one the model writes from a
task: a NAME (lowercase letters, digits, - and _), a ROLE describing what it is ("a
careful release engineer") and up to 5 GOALs. With --start it begins working on its
goals at once; without, it waits idle until you give it a task with 'agentctl task'.
--max-steps, --max-tokens and --max-time bound the run --start begins: when one runs
out the run ends (outcome budget_exhausted) and the agent goes idle.

  agentctl create --name scribe --role "a meticulous note taker" \
      --goal "keep notes.md up to date" --goal "never delete notes" --start`,
	run: verb(agentVerbs.runCreate),
}

// maxGoals is how many goals an agent may have.
const maxGoals = 5

func (a agentVerbs) runCreate(ctx context.Context, args []string) error {
	fs := a.newFlagSet()
	name := fs.String("name", "", "the agent's `NAME`")
	role := fs.String("role", "", "what the agent is, in a phrase: its `ROLE` (description)")
	var goals []string
	fs.Func("goal", "a `GOAL` for the agent; repeat for up to 5", func(v string) error { goals = append(goals, v); return nil })
	start := fs.Bool("start", false, "start working on the goals at once")
	var rb runBudgetFlags
	pos, budget, err := rb.parse(a.app, fs, args)
	if err != nil {
		return err
	}
	switch {
	case len(pos) > 0:
		return usagef("unexpected arguments %q: quote values with spaces", pos)
	case strings.TrimSpace(*name) == "":
		return usagef("missing --name")
	case strings.TrimSpace(*role) == "":
		return usagef("missing --role: describe the agent in a phrase")
	case len(goals) > maxGoals:
		return usagef("%d goals: at most %d", len(goals), maxGoals)
	case *start && len(goals) == 0:
		return usagef("--start needs at least one --goal to work on")
	case budget != nil && !*start:
		return usagef("--max-steps, --max-tokens and --max-time bound a run: add --start (or give them to agentctl task)")
	}
	ag, err := api.CreateAgentRoute.Do(ctx, a.api(), "", api.CreateAgentRequest{
		Name: *name, Description: *role, Goals: goals, Start: start, Budget: budget,
	})
	return printResult(a.app, ag, err, func() {
		fmt.Fprintf(a.stdout, "%s %s\n", ag.ID, ag.Name)
		if *start {
			a.note("follow it with: agentctl follow %s", refOf(ag))
		} else {
			a.note("agent %s is idle; give it a task with: agentctl task %s \"TASK\"", refOf(ag), refOf(ag))
		}
		// The deny rules of its config apply at once: say so if they have no second wall.
		// Only a warning, so a failed look-up says nothing: the agent is created.
		if v, err := api.PolicyRoute.Do(ctx, a.api(), ag.ID, api.None{}); err == nil {
			a.warn(v.Warnings)
		}
	})
}
