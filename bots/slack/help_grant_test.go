package slack

import (
	"strings"
	"testing"

	"github.com/agentd/agentd/internal/fakeslack"
)

// Help and exact grants in a thread, through a chat fake: `?` in the thread shows the answers to the person alone
// and leaves the proposal waiting; `y!` grants that exact command only, so the same
// command with other args asks again, and a later run of the exact one names the grant.
// (write_file's exact grant against other contents is TestGrantsEndToEnd in daemon/agent;
// here the same write twice in a row would be the watchdog's repeat, which asks.)
func TestHelpAndExactGrantInThread(t *testing.T) {
	e := newEnv(t)
	e.Script(touch("x"), touch("y"), touch("x"))
	thread := e.startRun("touch things")
	p1 := e.proposal(thread, 1)
	a := e.agentOf(thread)

	e.slack.Say(approver, channel, "channel", thread, "?", false)
	e.wait("the help, to the approver alone", func(v fakeslack.View) bool {
		for _, m := range v.Ephemeral(approver) {
			if strings.Contains(m.Text, "y -N") && strings.Contains(m.Text, "feedback") {
				return true
			}
		}
		return false
	})
	e.noDecisionHeld(thread, a.Pending.ID)

	e.slack.Say(approver, channel, "channel", thread, "y!", false)
	e.decided(thread, p1.TS, "Approved always (this exact command)* by")
	// Other args: asked, not approved by the grant.
	p2 := e.proposal(thread, 2)
	e.noDecisionHeld(thread, e.agentOf(thread).Pending.ID)
	e.click(approver, thread, p2, "approve")
	e.decided(thread, p2.TS, "Approved* by")
	// The exact command again runs under the grant, which the thread names.
	p3 := e.proposal(thread, 3)
	m3 := e.decided(thread, p3.TS, "Approved* by ")
	// Made here by a plain id: its maker is a mention.
	if text := sectionTexts(t, m3); !strings.Contains(text, "<@"+approver+">'s y!") {
		t.Errorf("the approval does not name the y! grant:\n%s", text)
	}
}
