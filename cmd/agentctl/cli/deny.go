package cli

import (
	"context"

	"github.com/agentd/agentd/api"
)

var denyCmd = &command{
	name:  "deny",
	args:  "AGENT",
	short: "refuse an agent's proposal and stop its run",
	long: `Deny refuses the command the agent is waiting on. The command does not run, the run
ends, and the agent stays idle with its history until you give it a new task with
'agentctl task'. To steer it instead of stopping it, use 'agentctl feedback'.`,
	run: verb(oneRef(agentRef, decisionVerbs.runDeny)),
}

func (a decisionVerbs) runDeny(ctx context.Context, ref string) error {
	return a.decide(ctx, ref, api.DecideRequest{Kind: api.DecisionDeny})
}
