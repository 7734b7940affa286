package agent

import (
	"context"
	"strings"

	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/daemon/checkpoint"
	"github.com/agentd/agentd/internal/display"
)

// putBack is the second wall behind the write-deny rules (the sandbox's read-only binds
// are the first): what step t changed since checkpoint before at a path the rules deny
// writing is put back as before held it, on the workspace ws, so a rule holds for a file
// created under a wildcard, in a folder made or renamed during the step, or through a
// link, however many paths the step changed; a file moved onto such a path goes back
// where it was. When the rules could not be read (rulesErr), or the change could not be
// checked against them, the wall fails closed: the step's whole change is put back, as
// nothing tells what it may keep, and its result says why. t then holds the workspace as
// left, the step's change without what was put back, and the line its result gets.
func putBack(ctx context.Context, s *checkpoint.Store, ws string, rules commands.PathRules, rulesErr error, before checkpoint.ID, t *takenAhead) {
	if t.diff == nil || t.diff.Files+t.diff.Folders == 0 || rules == nil && rulesErr == nil {
		return
	}
	var denied []checkpoint.DeniedWrite
	var moved []string
	if rulesErr == nil {
		denied, moved, rulesErr = t.diff.Denied(ctx, ws, rules)
	}
	var r *checkpoint.Restored
	var err error
	var what string
	switch {
	case rulesErr != nil:
		what = "the step's whole change was put back, as it could not be checked against the write-deny rules: " + rulesErr.Error()
		r, err = s.RestoreFrom(ctx, ws, t.info.ID, before)
	case len(denied) == 0:
		return
	default:
		paths, lines := moved, make([]string, 0, len(denied)+len(moved))
		for _, w := range denied {
			paths, lines = append(paths, w.Path), append(lines, w.String())
		}
		for _, p := range moved {
			lines = append(lines, display.Escape(p, display.Line)+", a file moved onto a denied path, to where it was")
		}
		what = "put back " + strings.Join(lines, "; put back ")
		r, err = s.PutBack(ctx, ws, before, t.info.ID, paths)
	}
	if err == nil {
		t.info, err = s.Get(ctx, r.To)
	}
	if err == nil {
		t.diff, err = s.Diff(ctx, before, r.To)
	}
	t.putBack = what
	if err != nil {
		t.putBack = "could not carry out what the deny rules ask (" + what + "): " + err.Error()
	}
}
