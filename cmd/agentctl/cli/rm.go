package cli

import (
	"context"
	"fmt"

	"github.com/agentd/agentd/api"
)

var rmCmd = &command{
	name:  "rm",
	args:  "AGENT",
	short: "delete an agent and its history",
	long: `Rm stops the agent and deletes it with its history. This cannot be undone; to keep the
history, use 'agentctl stop' instead.`,
	run: verb(oneRef(agentRef, agentVerbs.runRm)),
}

func (a agentVerbs) runRm(ctx context.Context, ref string) error {
	if err := api.DeleteAgentRoute.Send(ctx, a.api(), ref, api.None{}); err != nil {
		return agentErr(ref, err)
	}
	if !a.json {
		fmt.Fprintf(a.stdout, "removed agent %s\n", ref)
	}
	return nil
}
