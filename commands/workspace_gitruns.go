package commands

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
)

// A git run for an agent reads its repositories' config, hooks and sequencer state for as
// long as it runs: a bounded run's, in its sandbox, which keeps the run's own programs
// from writing them, and clone_repository's. A workspace command the daemon runs for
// another agent meanwhile (a parent's write_file into its helper's folder) writes
// outside any sandbox, after a check that a link swapped in since could make stale. So
// the two never meet: a write waits for the git runs in the tree it writes to end, and a
// git run for every write under way or waiting there. Run takes the write's side for
// every command that writes the workspace, a checkpoint's restore for the daemon's own
// writes (WriteHold); the git runs take theirs (GitRun).
var trees = treeHolds{held: map[*treeHold]bool{}, changed: make(chan struct{})}

type treeHolds struct {
	mu      sync.Mutex
	held    map[*treeHold]bool // the holds granted, and the writes waiting
	changed chan struct{}      // closed, and made anew, when a hold ends
}

// treeHold is a write to, or a git run in, the workspace ws (absolute and clean). A write
// with helpers also writes the helpers' workspaces below ws; one without writes ws's own
// files only.
type treeHold struct {
	ws      string
	git     bool
	helpers bool
}

// GitRun holds workspace ws for a git run until end is called: the writes into ws's own
// files (its agent's, and its parent's into its folder) wait meanwhile. It waits for
// those under way or waiting to end first, and fails when ctx ends before they do.
func GitRun(ctx context.Context, ws string) (end func(), err error) {
	return trees.take(ctx, &treeHold{ws: ws, git: true})
}

// WriteHold holds workspace ws for a write by the daemon itself (a checkpoint's restore)
// until end is called, waiting while git runs in ws, and with helpers in the helpers'
// workspaces below it too. It fails when ctx ends first.
func WriteHold(ctx context.Context, ws string, helpers bool) (end func(), err error) {
	return trees.take(ctx, &treeHold{ws: ws, helpers: helpers})
}

// forWrite holds the tree spec's command writes, with args, in workspace ws: the workspace
// its subject path lands in (ws, or a helper's below it), or all of ws for a command
// with no path; it waits while git runs there.
func forWrite(ctx context.Context, spec Spec, ws string, args json.RawMessage) (end func(), err error) {
	end, err = trees.take(ctx, writeOf(spec, ws, args))
	if err != nil {
		return nil, fmt.Errorf("%s: not run: git is running in this workspace (a command of its agent's, or of a helper's in its folder), "+
			"and nothing writes the repositories there while git reads them; it did not end in time (%w): try again once it has", spec.Name, err)
	}
	return end, nil
}

// writeOf is the hold for spec's write with args in ws. A write into a helper's folder
// holds every helper's tree beneath ws: a helper may turn a folder of its own into a link
// to a sibling's between this look and the write (the Root that writes follows links
// inside ws), so the workspace a path lands in is known only for the writer's own files,
// which no other agent changes meanwhile. A path of its own that goes through a link is
// one too: the link may lead into agents/, where a helper can move where it leads.
func writeOf(spec Spec, ws string, args json.RawMessage) *treeHold {
	var vals map[string]any
	json.Unmarshal(args, &vals) // CheckArgs passed them
	p, _ := vals[spec.Subject].(string)
	clean, err := CleanPath(p)
	if err != nil || workspaceOf(ws, clean) != ws {
		return &treeHold{ws: ws, helpers: true}
	}
	root, _, rel, err := openIn(ws, p)
	if err != nil {
		return &treeHold{ws: ws, helpers: true} // a loop of links now may be a path later
	}
	root.Close()
	return &treeHold{ws: ws, helpers: rel != clean}
}

// workspaceOf is the workspace whose files rel (clean, relative to ws) is in: a helper's
// when it is in the helpers' folder, and so on down.
func workspaceOf(ws, rel string) string {
	parts := strings.Split(rel, "/")
	for len(parts) >= 2 && parts[0] == HelpersFolder {
		ws, parts = filepath.Join(ws, parts[0], parts[1]), parts[2:]
	}
	return ws
}

// take adds h once no hold of the other kind it must wait for meets it, and returns its
// end. A write waits in the map, where the new git runs it meets see it.
func (t *treeHolds) take(ctx context.Context, h *treeHold) (func(), error) {
	abs, err := filepath.Abs(h.ws)
	if err != nil {
		return nil, err
	}
	h.ws = abs
	t.mu.Lock()
	if !h.git { // git runs taking turns in its tree cannot keep a waiting write out
		t.held[h] = true
	}
	for t.blocked(h) {
		changed := t.changed
		t.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			t.end(h)
			return nil, ctx.Err()
		}
		t.mu.Lock()
	}
	t.held[h] = true
	t.mu.Unlock()
	var once sync.Once
	return func() { once.Do(func() { t.end(h) }) }, nil
}

// end removes h, and wakes those that waited for it.
func (t *treeHolds) end(h *treeHold) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.held, h)
	close(t.changed)
	t.changed = make(chan struct{})
}

// blocked says whether h meets a hold of the other kind that it must wait for: a git run
// waits for the writes, under way or waiting, a write for the git runs under way. They
// meet where the write lands in the git run's workspace: its own files, or with helpers
// those of a helper beneath it. A helper's write does not wait for its parent's git,
// which takes no repository of agents/ (its own runs write them), nor a parent's write of
// its own files for a helper's. Caller holds t.mu.
func (t *treeHolds) blocked(h *treeHold) bool {
	for o := range t.held {
		if o.git == h.git {
			continue
		}
		git, write := o, h
		if h.git {
			git, write = h, o
		}
		if git.ws == write.ws || write.helpers && within(write.ws, git.ws) {
			return true
		}
	}
	return false
}
