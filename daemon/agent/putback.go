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
// nothing tells what it may keep, and its result says why. Where the checkpoints could
// not see, it fails closed too: a folder the end did not capture near a rule is put back
// whole (checkpoint.Diff.Denied); what cannot be put back — the end's checkpoint failed,
// the start did not capture what a path held, a put back failed — is said in the result
// and t.unchecked, and the agent pauses for a person (checkpoints.ended). t then holds
// the workspace as left, the step's change without what was put back, and the line its
// result gets. The helpers' folder is none of the wall's business, neither checked nor
// put back: each helper owns its workspace there, and may be writing it meanwhile.
func putBack(ctx context.Context, s *checkpoint.Store, ws string, rules commands.PathRules, rulesErr error, before checkpoint.ID, t *takenAhead) {
	if rules == nil && rulesErr == nil {
		return
	}
	if t.err != nil {
		t.putBack = "what this step wrote could not be checked against the write-deny rules, as its end's checkpoint failed: a person must look at the workspace"
		t.unchecked = t.putBack
		return
	}
	if t.diff == nil || t.diff.Files+t.diff.Folders == 0 && !t.info.Partial {
		return // a folder a partial checkpoint did not capture may hide a change
	}
	var denied []checkpoint.DeniedWrite
	var moved []string
	if rulesErr == nil {
		denied, moved, rulesErr = t.diff.Denied(ctx, ws, rules, commands.HelpersFolder)
	}
	var r *checkpoint.Restored
	var err error
	var what string
	switch {
	case rulesErr != nil:
		what = "the step's whole change was put back, as it could not be checked against the write-deny rules: " + rulesErr.Error()
		r, err = s.RestoreFrom(ctx, ws, t.info.ID, before, commands.HelpersFolder)
	default:
		paths, lines := moved, make([]string, 0, len(denied)+len(moved))
		var unknown []string
		for _, w := range denied {
			if w.Unknown {
				unknown = append(unknown, w.String())
				continue
			}
			paths, lines = append(paths, w.Path), append(lines, w.String())
		}
		for _, p := range moved {
			lines = append(lines, display.Escape(p, display.Line)+", a file moved onto a denied path, to where it was")
		}
		if len(unknown) > 0 {
			t.unchecked = "could not put back " + strings.Join(unknown, "; ") + ", as no checkpoint before the step captured it: a person must look at the workspace" +
				" (raise [checkpoints] max_entries, max_file_bytes or the state dir's free disk so they capture it)"
		}
		if len(paths) == 0 {
			t.putBack = t.unchecked
			return
		}
		what = "put back " + strings.Join(lines, "; put back ")
		r, err = s.PutBack(ctx, ws, before, t.info.ID, paths, commands.HelpersFolder)
	}
	if err == nil {
		t.info, err = s.Get(ctx, r.To)
	}
	if err == nil {
		t.diff, err = s.Diff(ctx, before, r.To)
	}
	if err != nil {
		what = "could not carry out what the deny rules ask (" + what + "): " + err.Error() + ": a person must look at the workspace"
		t.unchecked = strings.TrimPrefix(t.unchecked+"; "+what, "; ")
		what = ""
	}
	t.putBack = strings.Trim(what+"; "+t.unchecked, "; ")
}

// takenAhead is the checkpoint taken for proposal's start or end before its transaction
// (Supervisor.checkpointAhead), with at an end what the step changed; or why none could
// be taken.
type takenAhead struct {
	proposal string
	info     checkpoint.Info
	diff     *checkpoint.Diff
	err      error
	putBack  string // at an end, what putBack put back for the deny rules
	// unchecked: at an end, what the second wall could not check or put back (putBack);
	// the agent pauses for a person
	unchecked string
}
