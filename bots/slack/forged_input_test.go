package slack

import (
	"encoding/json"
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

// A hostileText model's question and proposal ping, link and preview nothing, anywhere the
// bot writes: messages, their edits, notes to one person, files' comments and names.
func TestHostileModelTextPingsAndLinksNothing(t *testing.T) {
	e := newEnv(t)
	e.script(
		reply("ask_user", map[string]string{"question": hostileText}),
		reply("write_file", map[string]string{"path": "notes.txt", "contents": strings.Repeat(hostileText+"\n", 6)}),
	)
	thread := e.startRun("write the notes")
	e.wait("the question", func(v fakeslack.View) bool { return hasText(v.Messages(channel, thread), "Question") })
	e.slack.Say(approver, channel, "channel", thread, "fine", false)
	p := e.proposal(thread, 2)
	if !strings.Contains(p.Text, "write_file") {
		t.Fatalf("step 2 is not the hostile write_file: %s", p.Text)
	}
	e.click(approver, thread, p, "deny")
	e.decided(thread, p.TS, "Denied* by")
	e.checkChatRules()
	e.slack.Wait(0, func(v fakeslack.View) bool {
		for _, m := range v.AllMessages() {
			if bad := markup(m.Text + string(m.Blocks)); bad != "" {
				t.Errorf("message %s holds live markup %q: %s", m.TS, bad, raw.Replace(string(m.Blocks)))
			}
		}
		for _, m := range v.Ephemeral(approver) {
			if bad := markup(m.Text); bad != "" {
				t.Errorf("note holds live markup %q: %s", bad, m.Text)
			}
		}
		for _, f := range v.Files() {
			if bad := markup(f.Name + f.Comment); bad != "" {
				t.Errorf("file %q holds live markup %q in its name or comment", f.Name, bad)
			}
		}
		return true
	})
}

// A reply written while proposal 1 waited, delivered late (queued while the socket was
// down, behind the click that decided proposal 1), decides nothing after it: proposal 2,
// which nobody had seen, stays undecided.
func TestLateReplyAfterTheDecidingClickDecidesNothing(t *testing.T) {
	e := newEnv(t)
	e.script(
		reply("bots_test_touch", map[string]string{"what": "one"}),
		reply("bots_test_touch", map[string]string{"what": "two"}),
	)
	thread := e.startRun("touch twice")
	p1 := e.proposal(thread, 1)
	e.slack.Drop()
	e.click(approver, thread, p1, "approve")
	e.slack.Say(approver2, channel, "channel", thread, "y", false) // written for proposal 1
	e.wait("a reconnect", func(v fakeslack.View) bool { return v.Connections() >= 2 && v.Connected() })
	p2 := e.proposal(thread, 2)
	if testutil.Hold(300*time.Millisecond, func() bool {
		a := e.agentOf(thread)
		return a.Pending != nil && strings.Contains(p2.Text, "Step 2") && e.decisions(a.Pending.ID) == 0
	}) {
		e.checkChatRules()
		return
	}
	a := e.agentOf(thread)
	t.Errorf("proposal 2 was decided by a reply written for proposal 1: %+v", a)
}

// A button value forged onto a proposal's message — another agent, another proposal,
// another hash, a count that does not parse or past the one shown — decides nothing.
func TestForgedButtonValuesDecideNothing(t *testing.T) {
	e := newEnv(t)
	e.script(reply("bots_test_touch", map[string]string{"what": "one"}))
	thread := e.startRun("touch once")
	p := e.proposal(thread, 1)
	pid := e.agentOf(thread).Pending.ID
	value := button(t, p, "approve")
	f := strings.Fields(value)
	for _, forged := range []string{
		"a-0000000000 " + f[1] + " 1 " + f[3],     // another agent
		f[0] + " p-0000000000 1 " + f[3],          // another proposal
		f[0] + " " + f[1] + " 1 0000000000000000", // another hash
		f[0] + " " + f[1] + " -5 " + f[3],         // a count that does not parse
	} {
		e.slack.Click(approver, channel, thread, p.TS)("agentd_approve", forged)
	}
	// Approve ×1000 where the button shows ×3.
	e.slack.Click(approver, channel, thread, p.TS)("agentd_approve_n", f[0]+" "+f[1]+" 1000 "+f[3])
	testutil.Hold(300*time.Millisecond, func() bool { return e.decisions(pid) == 0 })
	if n := e.decisions(pid); n != 0 {
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
