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

func (f *runBudgetFlags) register(fs *flag.FlagSet) {
	fs.IntVar(&f.steps, "max-steps", 0, "end the run after `N` steps (outcome budget_exhausted)")
	fs.Int64Var(&f.tokens, "max-tokens", 0, "end the run after `N` model tokens")
	fs.StringVar(&f.time, "max-time", "", "end the run after this wall-time `DURATION`, e.g. 30m")
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

// runBudgetString is a run's own budget in one line.
func runBudgetString(b api.Budget) string {
	var parts []string
	if b.MaxSteps > 0 {
		parts = append(parts, fmt.Sprintf("%d steps", b.MaxSteps))
	}
	if b.MaxTokens > 0 {
		parts = append(parts, fmt.Sprintf("%d tokens", b.MaxTokens))
	}
	if b.MaxTime != "" {
		parts = append(parts, b.MaxTime+" wall time")
	}
	return strings.Join(parts, ", ")
}
