package commands

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
)

// A git run for an agent reads its repositories' config, hooks and sequencer state for as
// long as it runs: a bounded run's, in its sandbox, which keeps the run's own programs
// from writing them, and clone_repository's. A workspace command the daemon runs for
// another agent meanwhile (a parent's write_file into its helper's folder) writes
// outside any sandbox, after a check that a link swapped in since could make stale. So
// the two never meet: a write waits for every git run in its tree to end, and a git run
// for every write under way there. Run takes the write's side for every command that
// writes the workspace; the git runs take theirs (GitRun).
var trees = treeHolds{held: map[*treeHold]bool{}, changed: make(chan struct{})}

type treeHolds struct {
	mu      sync.Mutex
	held    map[*treeHold]bool
	changed chan struct{} // closed, and made anew, when a hold ends
}

// treeHold is a write to, or a git run in, the workspace ws (absolute and clean).
type treeHold struct {
	ws  string
	git bool
}

// GitRun holds workspace ws for a git run until end is called: the writes of ws's agent
// and of the agents above it (a parent's into its helper's folder) wait meanwhile. It
// waits for those under way to end first, and fails when ctx ends before they do.
func GitRun(ctx context.Context, ws string) (end func(), err error) {
	return trees.take(ctx, ws, true)
}

// forWrite holds ws for a command that writes it, waiting while git runs in its tree.
func forWrite(ctx context.Context, name, ws string) (end func(), err error) {
	end, err = trees.take(ctx, ws, false)
	if err != nil {
		return nil, fmt.Errorf("%s: not run: git is running in this workspace (a command of its agent's, or of a helper's in its folder), "+
			"and nothing writes the repositories there while git reads them; it did not end in time (%w): try again once it has", name, err)
	}
	return end, nil
}

// take adds a hold on ws once no hold of the other kind overlaps it (one tree holds the
// other), and returns its end.
func (t *treeHolds) take(ctx context.Context, ws string, git bool) (func(), error) {
	abs, err := filepath.Abs(ws)
	if err != nil {
		return nil, err
	}
	h := &treeHold{ws: abs, git: git}
	t.mu.Lock()
	for t.blocked(h) {
		changed := t.changed
		t.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		t.mu.Lock()
	}
	t.held[h] = true
	t.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			t.mu.Lock()
			defer t.mu.Unlock()
			delete(t.held, h)
			close(t.changed)
			t.changed = make(chan struct{})
		})
	}, nil
}

// blocked says whether h and a hold of the other kind meet: the write's workspace holds
// the git run's (its own, or a helper's beneath it). A helper's write does not wait for
// its parent's git, which takes no repository of agents/ (its own runs write them).
// Caller holds t.mu.
func (t *treeHolds) blocked(h *treeHold) bool {
	for o := range t.held {
		if o.git == h.git {
			continue
		}
		git, write := o, h
		if h.git {
			git, write = h, o
		}
		if within(write.ws, git.ws) {
			return true
		}
	}
	return false
}
