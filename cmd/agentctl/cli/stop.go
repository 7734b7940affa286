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
	run: (*app).runStop,
}

func (a *app) runStop(ctx context.Context, args []string) error {
	_, err := a.agentAction(ctx, args, (*api.Client).Stop)
	return err
}
