package chattest

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/bots"
	"github.com/agentd/agentd/internal/testutil"
)

// A stranger's click and typed "y" are each refused with a note in the run's thread
// that only they see, and another bot's "y" is ignored: none of them reaches the agent,
// the refusal is logged, and an approver through a group may still decide.
func nonApproverRefused(t *testing.T, c Chat) {
	d := c.Daemon()
	d.Script(Touch("x", speak))
	thread := c.StartRun("touch x")
	p := c.Proposal(thread, 1)
	c.Click(Stranger, thread, p, bots.ActionApprove)
	y := c.Say(Stranger, thread, "y")
	c.Say(OtherBot, thread, "y")
	c.Wait("two refusals", func() bool { return c.Answered(Stranger, "not an approver") == 2 })
	if !Has(c.RepliesTo(Stranger, thread, y), "not an approver") {
		t.Errorf("the typed y's refusal is not in the thread: %q", c.RepliesTo(Stranger, thread, y))
	}
	// Nothing the refusals or the other bot sent may reach the agent meanwhile.
	id := agentOf(c, thread).Pending.ID
	testutil.Hold(100*time.Millisecond, func() bool {
		a := agentOf(c, thread)
		return a.Pending != nil && a.Pending.ID == id && d.Decisions(id) == 0
	})
	if a := agentOf(c, thread); a.Pending == nil || a.Pending.ID != id || d.Decisions(id) != 0 {
		t.Fatalf("a refused click changed the agent: %+v", a)
	}
	if !strings.Contains(d.Logs.String(), "refused a non-approver") {
		t.Error("refusal not logged")
	}
	c.Click(GroupApprover, thread, p, bots.ActionDeny)
	c.Decided(thread, p, c.Shown("Denied", GroupApprover))
}

// A proposal of 10,000 characters full of & < > and backticks, in its speech and its
// arguments: every post is taken by the strict fake, the message says what it cut, the
// full text and the full arguments are uploaded, and an approval runs it.
func hostileTenThousandCharProposalPostedWhole(t *testing.T, c Chat) {
	args := map[string]string{}
	for i, n := range EchoParams {
		args[n] = HostileArg(i)
	}
	said := strings.Repeat("&<>`*_ ```", 200) // the relay shows 600 bytes of it; escaped, over either platform's limit
	c.Daemon().Script(Reply(EchoCommand, args, said))
	thread := c.StartRun("echo it")
	p := c.Proposal(thread, 1)
	if text := c.Cut(thread, p); !strings.Contains(text, "Full arguments") || !strings.Contains(text, "attached") {
		t.Errorf("the proposal does not say its arguments are attached:\n%s", text)
	}
	var files map[string]string
	c.Wait("the full text and the arguments uploaded", func() bool {
		files = c.Files(thread)
		full := false
		for _, f := range files {
			full = full || strings.Contains(f, said[:300]) // the relay shows the speech's first 600 bytes
		}
		return full && files["step-1-"+EchoCommand+"-args.json"] != ""
	})
	var got map[string]string
	if err := json.Unmarshal([]byte(files["step-1-"+EchoCommand+"-args.json"]), &got); err != nil {
		t.Fatalf("the uploaded arguments: %v", err)
	}
	for n, want := range args {
		if got[n] != want {
			t.Errorf("argument %s uploaded with %d of its %d characters", n, len(got[n]), len(want))
		}
	}
	c.Click(Approver, thread, p, bots.ActionApprove)
	c.Decided(thread, p, c.Shown("Approved", Approver))
	c.Cut(thread, c.Find(thread, c.Shown("Approved", Approver)))
	c.Wait("the result", func() bool { return Has(c.Posted(thread), "echoed") })
	if bad := c.Refused(); len(bad) != 0 {
		t.Errorf("the fake refused a post: %q", bad)
	}
}
