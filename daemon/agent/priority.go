package agent

import (
	"context"
	"sync"

	"github.com/agentd/agentd/daemon/llm"
)

// batchRuns are the runs the daemon started itself (schedules and team turns, through
// StartTask and CreateRun): their model calls queue as batch work, taking turns agent by
// agent, behind the calls of agents a person is waiting on. It is kept in memory only: a
// run resumed after a restart queues as interactive, which delays no person, and so do
// the helpers a scheduled agent starts (start_agent).
type batchRuns struct {
	mu  sync.Mutex // guards ids
	ids map[string]bool
}

func (b *batchRuns) mark(runID string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ids == nil {
		b.ids = map[string]bool{}
	}
	b.ids[runID] = true
}

func (b *batchRuns) drop(runID string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.ids, runID)
}

func (b *batchRuns) has(runID string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.ids[runID]
}

// modelTurn is what a runner knows of whose turn its model calls are, guarded by its mu:
// runID is the run next() last saw; personNext is set when a person decided, answered or
// gave feedback, so the next step is theirs to wait on.
type modelTurn struct {
	runID      string
	personNext bool
}

// modelPriority puts the class of the agent's next step's model calls in ctx: batch for
// a run the daemon started, unless a person has just decided, answered or given feedback
// — then they are waiting for that step, which goes first. The agent is the key batch
// calls take turns by.
func (r *runner) modelPriority(ctx context.Context) context.Context { return r.priority(ctx, true) }

// priority is modelPriority; consume false leaves a person's turn for the next step (a
// command's own model calls, such as a web page's summary, run before it).
func (r *runner) priority(ctx context.Context, consume bool) context.Context {
	r.mu.Lock()
	defer r.mu.Unlock()
	class := llm.Interactive
	if r.s.batchRuns.has(r.runID) && !r.personNext {
		class = llm.Batch
	}
	if consume {
		r.personNext = false
	}
	return llm.WithPriority(ctx, class, r.id)
}
