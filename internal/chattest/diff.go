package chattest

import (
	"strings"
	"testing"

	"github.com/agentd/agentd/bots"
)

// A write_file proposal over a file of the agent's workspace shows the diff: the old
// line removed, the new one added and the line kept around them, escaped for the
// platform (its markup and entities shown as text, inside the code block).
func writeFileDiffShown(t *testing.T, c Chat) {
	c.Daemon().Script(Reply("write_file", map[string]string{"path": "notes.txt", "contents": "keep\nold & <a> *bold* line\n"}, speak),
		Reply("write_file", map[string]string{"path": "notes.txt", "contents": "keep\nnew & <b> `tick` line\n"}, speak))
	thread := c.StartRun("edit notes")
	p1 := c.Proposal(thread, 1)
	c.Click(Approver, thread, p1, bots.ActionApprove)
	c.Decided(thread, p1, c.Shown("Approved", Approver))
	p2 := c.Proposal(thread, 2)
	text := c.Text(thread, p2)
	for _, line := range []string{"\n-old & <a> *bold* line\n", "\n+new & <b> `tick` line", "\n keep\n"} {
		if !strings.Contains(text, c.Code(line)) {
			t.Errorf("the diff lacks %q:\n%s", c.Code(line), text)
		}
	}
}
