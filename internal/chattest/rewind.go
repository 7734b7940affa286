package chattest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd/agentd/api"
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
// a non-approver's command and click are refused and change nothing, the approver's
// Rewind click puts the workspace back and shows how to undo it, a second click finds
// the question answered, and a question answered after the workspace changed applies
// nothing.
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
	c.Find(thread, "/agent rewind "+a.Name+" --undo rw-") // shown as code, which no platform escapes
	if _, err := os.Stat(file); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("after the approver's Rewind notes.txt is still there: %v", err)
	}
	if c.Asks(thread, ask) {
		t.Error("the rewound question still has its buttons")
	}
	c.Click(GroupApprover, thread, ask, bots.ActionRewind)
	c.Wait("a second approver's click told the question was answered", func() bool { return Has(c.NotesTo(GroupApprover), "already answered") })

	// A question answered after the workspace changed applies nothing: the rewind is
	// bound to the workspace it showed.
	if got := c.Command(Approver, cmd); !strings.Contains(got, "Asked in agent") {
		t.Fatalf("/agent %s again = %q", cmd, got)
	}
	again := c.Find(thread, "Would change:")
	late := filepath.Join(a.Workspace, "late.txt")
	if err := os.WriteFile(late, []byte("written after the question"), 0o644); err != nil {
		t.Fatal(err)
	}
	c.Click(Approver, thread, again, bots.ActionRewind)
	c.Wait("the click on a changed workspace refused", func() bool {
		return Has(c.NotesTo(Approver), "the workspace changed since the rewind was shown")
	})
	if _, err := os.Stat(late); err != nil {
		t.Errorf("a rewind shown before late.txt was written removed it: %v", err)
	}
}

// CheckpointMessages are the messages of a rewind and of a result with its change, by
// name, as the relay builds them for platform, for each platform's golden renderings;
// by is a user of the platform, and the agent's name and the diff try to inject markup.
func CheckpointMessages(platform, by string) map[string]bots.Message {
	diff := "deleted file notes/*a*.txt (+0 −2)\n\n--- a/notes/*a*.txt\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-@everyone ```\n-\u202ehidden\n"
	restore := api.StepChange{AgentID: "a-1", Agent: "writer_*x*", ID: "p-0123456789ab", RunID: "r-5f2c9a", Step: 3, Kind: "step",
		Files: 1, Removed: 2, Summary: "changed 1 file (+0 −2)", Preview: &api.Preview{Kind: api.PreviewChange, Summary: "changed 1 file (+0 −2)", Diff: diff}}
	plan := &api.Rewind{AgentID: "a-1", Agent: "writer_*x*", Step: 3, Restore: restore,
		From: "5be1c0de00112233445566778899aabbccddeeff00112233445566778899aabb"}
	done := *plan
	done.Done, done.Undo = true, "rw-7"
	change := restore
	change.Summary, change.Preview = "changed 1 file (+2 −0)", &api.Preview{Kind: api.PreviewChange, Summary: "changed 1 file (+2 −0)",
		Diff: "created file notes/*a*.txt (+2 −0)\n\n--- /dev/null\n+++ b/notes/*a*.txt\n@@ -0,0 +1,2 @@\n+@everyone ```\n+\u202ehidden\n"}
	result, _ := bots.FormatResult(&api.Episode{Step: 3, Command: "write_file", Outcome: "succeeded",
		Result: "wrote notes/*a*.txt\n[workspace: changed 1 file (+2 −0)]"}, 2500)
	result.Parts = append(result.Parts, bots.ChangeParts(&change)...)
	return map[string]bots.Message{
		"rewind_asked":     bots.FormatRewind(bots.RewindView{Plan: plan, By: by}, platform),
		"rewind_done":      bots.FormatRewind(bots.RewindView{Plan: &done, Closer: by}, platform),
		"rewind_cancelled": bots.FormatRewind(bots.RewindView{Plan: plan, Closer: by}, platform),
		"result_changed":   result,
	}
}
