package chattest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd/agentd/bots"
)

// noteLines is a note long enough that its diff is cut in a message and attached whole.
var noteLines = func() string {
	var b strings.Builder
	for i := 1; i <= 30; i++ {
		fmt.Fprintf(&b, "line %d of the notes\n", i)
	}
	return b.String()
}()

// A write step's result says what it changed and attaches its whole diff; then an
// approver rewinds it from the thread: /agent rewind asks with what would be restored,
// a non-approver's command and click are refused and change nothing, and the approver's
// Rewind click puts the workspace back and shows how to undo it.
func rewindAskedInTheThreadAndDoneByAnApprover(t *testing.T, c Chat) {
	d := c.Daemon()
	d.Script(Reply("write_file", map[string]string{"path": "notes.txt", "contents": noteLines}, "I will write the notes"),
		Reply("finish", map[string]string{"reason": "written"}, "done"))
	thread := c.StartRun("write the notes")
	c.Click(Approver, thread, c.Proposal(thread, 1), bots.ActionApprove)
	result := c.Find(thread, "changed 1 file (+30 −0)")
	c.Click(Approver, thread, c.Proposal(thread, 2), bots.ActionApprove)
	a := agentOf(c, thread)
	c.Wait("the run's end", func() bool { return agentOf(c, thread).State == "idle" })
	if posted := strings.Join(c.Posted(thread), "\n"); !strings.Contains(posted, "Changed:") || !strings.Contains(posted, "+line 1 of the notes") ||
		!strings.Contains(posted, "more diff lines: full diff attached") {
		t.Errorf("the write's result (%s) does not show its change and say the diff is attached:\n%s", result.ID, posted)
	}
	var diff string
	c.Wait("the write's diff attached", func() bool { diff = c.Files(thread)["step-1-write_file.diff"]; return diff != "" })
	if !strings.Contains(diff, "+line 1 of the notes") || !strings.Contains(diff, "+line 30 of the notes") {
		t.Errorf("the attached diff is not whole:\n%s", diff)
	}

	file := filepath.Join(a.Workspace, "notes.txt")
	cmd := "rewind " + a.Name + " --to 1"
	if got := c.Command(Stranger, cmd); !strings.Contains(got, "not an approver") {
		t.Errorf("/agent %s by a stranger = %q, want a refusal", cmd, got)
	}
	if got := c.Command(Approver, cmd); !strings.Contains(got, "Asked in agent") {
		t.Fatalf("/agent %s = %q", cmd, got)
	}
	ask := c.Find(thread, "Would change:")
	if shown := strings.Join(c.Posted(thread), "\n"); !strings.Contains(shown, "deleted file notes.txt") || !strings.Contains(shown, "before step 1 of run") ||
		!strings.Contains(shown, strings.TrimPrefix(a.RunID, "r-")) {
		t.Errorf("the rewind's question does not say what it would restore:\n%s", shown)
	}
	c.Click(Stranger, thread, ask, bots.ActionRewind)
	c.Wait("the stranger's click refused", func() bool { return Has(c.NotesTo(Stranger), "not an approver") })
	if _, err := os.Stat(file); err != nil {
		t.Fatalf("a stranger's click changed the workspace: %v", err)
	}
	c.Click(Approver, thread, ask, bots.ActionRewind)
	c.Find(thread, "Undo with: /agent rewind") // the platform may escape the rest
	if _, err := os.Stat(file); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("after the approver's Rewind notes.txt is still there: %v", err)
	}
	if c.Asks(thread, ask) {
		t.Error("the rewound question still has its buttons")
	}
}
