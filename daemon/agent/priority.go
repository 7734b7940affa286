package agent

import (
	"context"
	"sync"

	"github.com/agentd/agentd/daemon/agent/policy"
	"github.com/agentd/agentd/daemon/llm"
	"github.com/agentd/agentd/daemon/store"
)

// batchRuns knows which runs' model calls queue as batch work, taking turns agent by
// agent behind the calls of agents a person is waiting on: the runs the daemon started
// itself (schedules and team turns, through StartTask and CreateRun), and the helpers
// those runs start (start_agent, message_agent), which inherit their parent run's class.
// Marks are made in memory as runs start and rebuilt from the store at Start (load), so
// a run resumed after a restart keeps its class.
type batchRuns struct {
	mu      sync.Mutex // guards ids and parents; taken last, never held while calling out
	ids     map[string]bool
	parents map[string]runParent // helper run -> the parent run waiting for it
}

// runParent is the parent of a helper's run: the agent and the run waiting for it.
type runParent struct{ agentID, runID string }

func (b *batchRuns) mark(runID string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ids == nil {
		b.ids = map[string]bool{}
	}
	b.ids[runID] = true
}

// link records that helperRun was started by parentRun of agent parentID: the helper's
// calls take the class of its parent's.
func (b *batchRuns) link(helperRun, parentID, parentRun string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.parents == nil {
		b.parents = map[string]runParent{}
	}
	b.parents[helperRun] = runParent{agentID: parentID, runID: parentRun}
}

func (b *batchRuns) drop(runID string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.ids, runID)
	delete(b.parents, runID)
}

// load marks the open runs the store says the daemon started, and links open helper
// runs to their parents' runs: what was marked before a restart.
func (b *batchRuns) load(ctx context.Context, st *store.Store) error {
	var ids []string
	var links []store.RunLink
	err := st.View(ctx, func(tx *store.Tx) (err error) {
		if ids, err = tx.DaemonStartedRuns(); err != nil {
			return err
		}
		links, err = tx.HelperRunLinks()
		return err
	})
	if err != nil {
		return err
	}
	for _, id := range ids {
		b.mark(id)
	}
	for _, l := range links {
		b.link(l.HelperRun, l.ParentID, l.ParentRun)
	}
	return nil
}

// class is the class of runID's calls: batch when it, or the run up its parent links
// that started it, was started by the daemon — unless a person waits on one of the
// parents along the way (personWaits, called holding no lock of batchRuns).
func (b *batchRuns) class(runID string, personWaits func(agentID string) bool) llm.Class {
	b.mu.Lock()
	batch := b.ids[runID]
	var chain []runParent // the parents, nearest first, up to the batch run
	for run := runID; !batch && len(chain) < policy.MaxAncestors; {
		p, ok := b.parents[run]
		if !ok {
			break
		}
		chain = append(chain, p)
		run, batch = p.runID, b.ids[p.runID]
	}
	b.mu.Unlock()
	if !batch {
		return llm.Interactive
	}
	for _, p := range chain {
		if personWaits(p.agentID) {
			return llm.Interactive
		}
	}
	return llm.Batch
}

// modelTurn is what a runner knows of whose turn its model calls are, guarded by its mu:
// runID is the run next() last saw; personNext is set when a person decided, answered or
// gave feedback, so the next step is theirs to wait on.
type modelTurn struct {
	runID      string
	personNext bool
}
