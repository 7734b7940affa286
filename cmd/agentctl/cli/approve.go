package cli

import (
	"context"

	"github.com/agentd/agentd/api"
)

var approveCmd = &command{
	name:  "approve",
	args:  "AGENT [-n N]",
	short: "run the command an agent proposes",
	long: `Approve runs the command the agent is waiting on (see it first with 'agentctl show AGENT').
With -n N it also runs the agent's next N-1 proposals without asking, like typing "y -N"
in 'agentctl follow'.

The approval names that exact proposal: if the agent has moved on, or someone already
decided (from another terminal, Slack or Discord), the daemon refuses and says so.`,
	run: verb(decisionVerbs.runApprove),
}

func (a decisionVerbs) runApprove(ctx context.Context, args []string) error {
	fs := a.newFlagSet()
	n := fs.Int("n", 1, "approve this proposal and the next `N`-1 without asking")
	ref, err := a.parseAgent(fs, args)
	if err != nil {
		return err
	}
	if *n < 1 {
		return usagef("-n %d: N must be at least 1", *n)
	}
	return a.decide(ctx, ref, api.DecideRequest{Kind: api.DecisionApprove, Count: *n})
}
