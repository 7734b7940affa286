package cli

import (
	"context"

	"github.com/agentd/agentd/api"
)

var resumeCmd = &command{
	name:  "resume",
	args:  "AGENT",
	short: "resume a paused or failed agent",
	long: `Resume lets a paused agent (paused by you, or by the daemon when it got stuck) or a
failed one carry on with its current run. To give an idle agent new work, use
'agentctl task' instead.`,
	run: verb(agentVerbs.runResume),
}

func (a agentVerbs) runResume(ctx context.Context, args []string) error {
	return a.agentAction(ctx, args, (*api.Client).Resume)
}
