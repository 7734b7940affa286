package cli

import (
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/agentd/agentd/api"
)

// runBudgetFlags are the --max-steps, --max-tokens and --max-time flags of the commands
// that start a run (run, create --start, task): they bound that run only, unlike
// `agentctl budget`, which bounds the agent over all its runs.
type runBudgetFlags struct {
	steps  int
	tokens int64
	time   string
}

// parse adds the flags to fs, parses args and returns the positionals and the budget.
func (f *runBudgetFlags) parse(a *app, fs *flag.FlagSet, args []string) ([]string, *api.Budget, error) {
	fs.IntVar(&f.steps, "max-steps", 0, "end the run after `N` steps (outcome budget_exhausted)")
	fs.Int64Var(&f.tokens, "max-tokens", 0, "end the run after `N` model tokens")
	fs.StringVar(&f.time, "max-time", "", "end the run after this wall-time `DURATION`, e.g. 30m")
	pos, err := a.parse(fs, args, -1)
	if err != nil {
		return nil, nil, err
	}
	b, err := f.budget()
	return pos, b, err
}

// budget is the run budget the flags ask for, nil when they set none; bad values are
// usage errors naming the flag.
func (f *runBudgetFlags) budget() (*api.Budget, error) {
	b := api.Budget{MaxSteps: f.steps, MaxTokens: f.tokens}
	switch {
	case f.steps < 0:
		return nil, usagef("--max-steps %d: want a number of steps, 1 or more", f.steps)
	case f.tokens < 0:
		return nil, usagef("--max-tokens %d: want a number of tokens, 1 or more", f.tokens)
	}
	if t := strings.TrimSpace(f.time); t != "" {
		d, err := time.ParseDuration(t)
		if err != nil || d < time.Second {
			return nil, usagef("--max-time %q: want a duration of at least 1s such as 30m or 1h30m", f.time)
		}
		b.MaxTime = d.String()
	}
	if b == (api.Budget{}) {
		return nil, nil
	}
	return &b, nil
}

// budgetLine is a budget's steps, tokens and time in one line, the time followed by
// timeIs (" wall time" for a run, " busy" for an agent); "" when it sets none of them.
func budgetLine(b api.Budget, timeIs string) string {
	var parts []string
	if b.MaxSteps > 0 {
		parts = append(parts, fmt.Sprintf("%d steps", b.MaxSteps))
	}
	if b.MaxTokens > 0 {
		parts = append(parts, fmt.Sprintf("%d tokens", b.MaxTokens))
	}
	if b.MaxTime != "" {
		parts = append(parts, b.MaxTime+timeIs)
	}
	return strings.Join(parts, ", ")
}
