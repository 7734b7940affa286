package cli

import (
	"context"

	"github.com/agentd/agentd/api"
)

var pauseCmd = &command{
	name:  "pause",
	args:  "AGENT",
	short: "pause an agent after its current step",
	long: `Pause stops the agent from taking further steps once the current one is done; a
command already running finishes. Nothing is lost: 'agentctl resume AGENT' carries on
where it stopped.`,
	run: verb(agentVerbs.runPause),
}

func (a agentVerbs) runPause(ctx context.Context, args []string) error {
	return a.agentAction(ctx, args, (*api.Client).Pause)
}
