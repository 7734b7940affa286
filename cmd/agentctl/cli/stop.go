package cli

import (
	"context"

	"github.com/agentd/agentd/api"
)

var stopCmd = &command{
	name:  "stop",
	args:  "AGENT",
	short: "end an agent's run; the agent stays, idle",
	long: `Stop ends the agent's current run: a proposal waiting for a decision is dropped, a
question withdrawn and a running command cancelled. The agent and its history stay;
give it a new task with 'agentctl task AGENT "TASK"'. To delete it, use 'agentctl rm'.`,
	run: verb(agentVerbs.runStop),
}

func (a agentVerbs) runStop(ctx context.Context, args []string) error {
	return a.agentAction(ctx, args, (*api.Client).Stop)
}
