package team

import (
	"context"

	"github.com/agentd/agentd/daemon/llm"
	"github.com/agentd/agentd/daemon/store"
)

// batchWork marks a team run's own model calls (turns, choices, reflections) as batch
// work in the daemon's model queue, taking turns with other runs by the team run's ID:
// no person waits on them, so agents a person is waiting on go first. Role agents' runs
// are marked by the supervisor (StartTask, CreateRun).
func batchWork(ctx context.Context, r *store.TeamRun) context.Context {
	return llm.WithPriority(ctx, llm.Batch, "team/"+r.ID)
}
