package agent

import (
	"context"
	"fmt"
	"strings"

	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/daemon/checkpoint"
)

// putBack is the second wall behind the write-deny rules (the sandbox's read-only binds
// are the first): what step t changed since checkpoint before at a path the rules deny
// writing is put back as before held it, on the workspace ws, so a rule holds for a file
// created under a wildcard, in a folder made or renamed during the step, or through a
// link. t then holds the workspace as left, the step's change without those paths, and
// the line its result gets.
func putBack(ctx context.Context, s *checkpoint.Store, ws string, rules commands.PathRules, before checkpoint.ID, t *takenAhead) {
	if rules == nil || t.diff == nil {
		return
	}
	var paths, lines []string
	for _, w := range t.diff.DeniedWrites(ws, rules) {
		paths, lines = append(paths, w.Path), append(lines, w.String())
	}
	if t.diff.Omitted > 0 {
		lines = append(lines, fmt.Sprintf("%d changes past the first %d were not checked against the deny rules", t.diff.Omitted, checkpoint.MaxChanges))
	}
	if len(paths) == 0 {
		t.putBack = strings.Join(lines, "; ")
		return
	}
	r, err := s.PutBack(ctx, ws, before, t.info.ID, paths)
	if err == nil {
		t.info, err = s.Get(ctx, r.To)
	}
	if err == nil {
		t.diff, err = s.Diff(ctx, before, r.To)
	}
	if err != nil {
		t.putBack = "could not put back what the deny rules keep from writes (" + strings.Join(lines, "; ") + "): " + err.Error()
		return
	}
	t.putBack = "put back " + strings.Join(lines, "; put back ")
}
