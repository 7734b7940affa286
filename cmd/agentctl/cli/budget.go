package cli

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/internal/display"
)

var budgetCmd = &command{
	name:  "budget",
	args:  "AGENT [--max-steps N] [--max-tokens N] [--max-time D] [--max-disk SIZE] [--reset] [--json]",
	short: "show or change an agent's budget over all its runs",
	long: `Budget bounds an agent over all its runs: how many steps it may take, how many model
tokens it may use, how long it may be busy (thinking and running commands, not
waiting for you), and how much disk its workspace may take. The config sets defaults
([agent] and [agents.NAME]); values set here win over them. 0 means no bound. --reset
drops the values set here, back to the config's.

An agent that reaches its budget is paused before its next step, with nothing lost;
'agentctl show' says which budget. Raising the budget lets it go on by itself; so does
deleting files in its workspace, then 'agentctl resume', for the disk budget.

Without flags, budget shows the budget and what the agent has used.

  agentctl budget researcher --max-tokens 500000 --max-time 2h`,
	run: verb(agentVerbs.runBudget),
}

func (a agentVerbs) runBudget(ctx context.Context, args []string) error {
	fs := a.newFlagSet()
	steps := fs.Int("max-steps", 0, "at most `N` steps over all runs (0: no bound)")
	tokens := fs.Int64("max-tokens", 0, "at most `N` model tokens over all runs (0: no bound)")
	busy := fs.String("max-time", "", "at most this busy `DURATION` over all runs, e.g. 90m (0: no bound)")
	disk := fs.String("max-disk", "", "at most this `SIZE` on disk for its workspace, e.g. 20GiB (0: no bound)")
	reset := fs.Bool("reset", false, "drop the values set with agentctl budget: the config's apply")
	ref, err := a.parseAgent(fs, args)
	if err != nil {
		return err
	}
	var req api.BudgetRequest
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "max-steps":
			req.MaxSteps = steps
		case "max-tokens":
			req.MaxTokens = tokens
		case "max-time":
			req.MaxTime = busy
		case "max-disk":
			n, err := display.ParseSize(*disk)
			if err != nil {
				n = -1 // refused below, with the flag's name
			}
			req.MaxDisk = &n
		}
	})
	req.Reset = *reset
	switch {
	case req.MaxSteps != nil && *steps < 0:
		return usagef("--max-steps %d: want 0 (no bound) or more", *steps)
	case req.MaxTokens != nil && *tokens < 0:
		return usagef("--max-tokens %d: want 0 (no bound) or more", *tokens)
	case req.MaxDisk != nil && *req.MaxDisk < 0:
		return usagef("--max-disk %q: want a size such as 20GiB or 512MiB, or 0 for no bound", *disk)
	case req.MaxTime != nil:
		d, err := time.ParseDuration(strings.TrimSpace(*busy))
		if *busy == "0" {
			d, err = 0, nil
		}
		if err != nil || d < 0 {
			return usagef("--max-time %q: want a duration such as 90m or 2h, or 0 for no bound", *busy)
		}
		req.MaxTime = new(d.String())
	}
	var ag *api.Agent
	if req == (api.BudgetRequest{}) {
		ag, err = api.AgentRoute.Do(ctx, a.api(), ref, api.None{})
	} else {
		ag, err = api.BudgetRoute.Do(ctx, a.api(), ref, req)
	}
	return printResult(a.app, ag, agentErr(ref, err), func() {
		writeBudget(a.stdout, ag)
	})
}

// writeBudget shows an agent's budget next to what it has used.
func writeBudget(w io.Writer, ag *api.Agent) {
	b := api.Budget{}
	if ag.Budget != nil {
		b = *ag.Budget
	}
	bound := func(n int64) string {
		if n == 0 {
			return "no bound"
		}
		return fmt.Sprint(n)
	}
	maxTime := cmp.Or(b.MaxTime, "no bound")
	fmt.Fprintf(w, "budget of %s over all its runs:\n", refOf(ag))
	fmt.Fprintf(w, "  steps:   %d of %s\n", ag.StepsTotal, bound(int64(b.MaxSteps)))
	fmt.Fprintf(w, "  tokens:  %d of %s\n", ag.PromptTokens+ag.EvalTokens, bound(b.MaxTokens))
	fmt.Fprintf(w, "  busy:    %s of %s\n", busyString(ag.BusyMS), maxTime)
	fmt.Fprintf(w, "  disk:    %s\n", diskString(ag.DiskBytes, b.MaxDisk))
	fmt.Fprintf(w, "  state:   %s\n", stateString(ag))
}

// diskString is the disk an agent's workspace takes next to its disk budget.
func diskString(used, budget int64) string {
	switch {
	case budget == 0:
		return "no bound (not measured)"
	case used == 0:
		return "not measured yet, of " + display.Size(budget)
	}
	return display.Size(used) + " of " + display.Size(budget)
}

// busyString is a busy time in ms, rounded for reading.
func busyString(ms int64) string {
	d := time.Duration(ms) * time.Millisecond
	if d >= time.Minute {
		d = d.Round(time.Second)
	}
	return d.String()
}
