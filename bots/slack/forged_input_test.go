package slack

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/fakeslack"
	"github.com/agentd/agentd/internal/testutil"
)

// Attacks on the chat decision path through the real adapter and the strict fake;
// the relay's own cases are in bots/hostile_chat_test.go.

// hostileText is model text that tries every way to ping, link or hide: Slack's special
// mentions, a user mention, a labelled link and a bare URL with a secret, bidi and
// zero-width characters, a fence, and entities.
const hostileText = "<!channel> <!here> <@UHOSTILE> <!subteam^SOPS> @everyone <https://evil.example/leak?d=SECRET|docs> " +
	"https://evil.example/leak?d=SECRET \u202egnp.exe\u202c a\u200bb ``` &amp; &<>"

// raw is Slack markup as Slack reads it: the JSON escapes of Block Kit undone.
var raw = strings.NewReplacer(`\u003c`, "<", `\u003e`, ">", `\u0026`, "&")

// markup reports the live Slack markup s holds: a special mention, a user mention of
// someone other than the approver, or a link Slack would make of <…>.
func markup(s string) string {
	s = raw.Replace(s)
	for _, bad := range []string{"<!channel", "<!here", "<!subteam", "<@UHOSTILE", "<https://", "\u202e", "a\u200bb"} {
		if strings.Contains(s, bad) {
			return bad
		}
	}
	return ""
}

func (c *slackChat) HostileText() string { return hostileText }

// LiveMarkup is the live markup in every message (and edit), note to the approver, and
// file's name and comment.
func (c *slackChat) LiveMarkup() []string {
	var out []string
	c.slack.Wait(0, func(v fakeslack.View) bool {
		for _, m := range v.AllMessages() {
			if bad := markup(m.Text + string(m.Blocks)); bad != "" {
				out = append(out, fmt.Sprintf("message %s holds %q: %s", m.TS, bad, raw.Replace(string(m.Blocks))))
			}
		}
		for _, m := range v.Ephemeral(approver) {
			if bad := markup(m.Text); bad != "" {
				out = append(out, fmt.Sprintf("a note holds %q: %s", bad, m.Text))
			}
		}
		for _, f := range v.Files() {
			if bad := markup(f.Name + f.Comment); bad != "" {
				out = append(out, fmt.Sprintf("file %q holds %q in its name or comment", f.Name, bad))
			}
		}
		return true
	})
	return out
}

// A reply written while proposal 1 waited, delivered late (queued while the socket was
// down, behind the click that decided proposal 1), decides nothing after it: proposal 2,
// which nobody had seen, stays undecided.
func TestLateReplyAfterTheDecidingClickDecidesNothing(t *testing.T) {
	e := newEnv(t)
	e.Script(touch("one"), touch("two"))
	thread := e.startRun("touch twice")
	p1 := e.proposal(thread, 1)
	e.slack.Drop()
	e.click(approver, thread, p1, "approve")
	e.slack.Say(approver2, channel, "channel", thread, "y", false) // written for proposal 1
	e.wait("a reconnect", func(v fakeslack.View) bool { return v.Connections() >= 2 && v.Connected() })
	p2 := e.proposal(thread, 2)
	if testutil.Hold(300*time.Millisecond, func() bool {
		a := e.agentOf(thread)
		return a.Pending != nil && strings.Contains(p2.Text, "Step 2") && e.Decisions(a.Pending.ID) == 0
	}) {
		e.checkChatRules()
		return
	}
	a := e.agentOf(thread)
	t.Errorf("proposal 2 was decided by a reply written for proposal 1: %+v", a)
}

// A button value forged onto a proposal's message — another agent, a count that does
// not parse or past the one shown — decides nothing. (Another proposal or hash is the
// forged_button_values_decide_nothing scenario.)
func TestForgedButtonValuesDecideNothing(t *testing.T) {
	e := newEnv(t)
	thread, p := e.touchRun("touch once", "one")
	pid := e.agentOf(thread).Pending.ID
	value := button(t, p, "approve")
	f := strings.Fields(value)
	for _, forged := range []string{
		"a-0000000000 " + f[1] + " 1 " + f[3], // another agent
		f[0] + " " + f[1] + " -5 " + f[3],     // a count that does not parse
	} {
		e.slack.Click(approver, channel, thread, p.TS)("agentd_approve", forged)
	}
	// Approve ×1000 where the button shows ×3.
	e.slack.Click(approver, channel, thread, p.TS)("agentd_approve_n", f[0]+" "+f[1]+" 1000 "+f[3])
	testutil.Hold(300*time.Millisecond, func() bool { return e.Decisions(pid) == 0 })
	if n := e.Decisions(pid); n != 0 {
		t.Fatalf("a forged button decided the proposal (%d decisions)", n)
	}
	e.click(approver, thread, p, "approve")
	e.decided(thread, p.TS, "Approved* by")
	var calls []json.RawMessage
	e.slack.Wait(0, func(v fakeslack.View) bool { calls = v.Views(); return true })
	if len(calls) != 0 {
		t.Errorf("a forged button opened a dialog: %s", calls)
	}
}
