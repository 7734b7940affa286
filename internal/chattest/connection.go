package chattest

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/bots"
	"github.com/agentd/agentd/internal/testutil"
)

// hostileSpeak is what the agent says in mentionStartsARunApprovedByAClick: markup
// for either platform, a ping.
const hostileSpeak = "I will bots_test_touch <now> & **then** @everyone"

// A mention starts a run; its proposal has the four buttons and shows the agent's words
// escaped and its plan. A click on approve ×3 decides it, answered as the platform
// requires; three commands run and their results are posted; a typed "y" approves the
// finish. No token the bot holds reaches the logs.
func mentionStartsARunApprovedByAClick(t *testing.T, c Chat) {
	d := c.Daemon()
	for _, w := range []string{"a", "b", "c"} {
		d.Script(Touch(w, hostileSpeak))
	}
	thread := c.StartRun("touch three things")
	p := c.Proposal(thread, 1)
	buttons := c.Buttons(p)
	for _, a := range []string{bots.ActionApprove, bots.ActionApproveN, bots.ActionDeny, bots.ActionFeedback} {
		if !slices.Contains(buttons, a) {
			t.Errorf("the proposal's buttons are %q, no %s", buttons, a)
		}
	}
	if text := c.Text(thread, p); !strings.Contains(text, c.Escaped(hostileSpeak)) || !strings.Contains(text, "Plan:") {
		t.Errorf("the proposal does not show the agent's words escaped (%q) and its plan:\n%s", c.Escaped(hostileSpeak), text)
	}
	Drain()
	c.Click(Approver, thread, p, bots.ActionApproveN)
	c.Decided(thread, p, c.Shown("Approved ×3", Approver))
	c.ClicksAnswered(Approver)
	TouchedInOrder(t, "a", "b", "c")
	c.Wait("three results", func() bool {
		posted := c.Posted(thread)
		return Has(posted, "touched a") && Has(posted, "touched b") && Has(posted, "touched c")
	})
	fin := c.Proposal(thread, 4)
	c.Say(Approver, thread, "y")
	c.Decided(thread, fin, c.Shown("Approved", Approver))
	c.Wait("the finish note", func() bool { return Has(c.Posted(thread), "Finished: all done") })
	for _, token := range c.Tokens() {
		if token == "" || strings.Contains(d.Logs.String(), token) {
			t.Errorf("a token (%d bytes) is in the logs, or empty", len(token))
		}
	}
}

// A click made while the bot's connection is down is held by the platform and applied
// once the bot is back, answered as the platform requires; a reconnect the platform
// asks for is survived too, and the run goes on to its finish.
func droppedConnectionLosesNothing(t *testing.T, c Chat) {
	c.Daemon().Script(Touch("x", speak))
	thread := c.StartRun("touch")
	p := c.Proposal(thread, 1)
	reconnected := c.Drop()
	c.Click(Approver, thread, p, bots.ActionApprove)
	reconnected()
	c.Decided(thread, p, c.Shown("Approved", Approver))
	c.ClicksAnswered(Approver)
	c.AskReconnect()
	fin := c.Proposal(thread, 2)
	c.Click(Approver, thread, fin, bots.ActionApprove)
	c.Find(thread, "Finished")
}

// A direct message to the bot starts a run there: its note, its proposal, and a typed
// "y" runs the command.
func directMessageRun(t *testing.T, c Chat) {
	c.Daemon().Script(Touch("dm", speak))
	c.SayDirect(Approver, "touch dm")
	for _, text := range []string{"is on it", "Step 1: "} {
		c.Wait(text+" in the direct message", func() bool { return Has(c.DirectPosted(), text) })
	}
	c.SayDirect(Approver, "y")
	c.Wait("the result in the direct message", func() bool { return Has(c.DirectPosted(), "touched dm") })
}

// A button forged onto a proposal's message naming a proposal that does not exist, or
// the proposal with another hash, is refused with a note and decides nothing; the
// message's own button still does. (One naming another run's proposal is
// click_in_thread_a_naming_b_refused; what each note says, Discord's forged custom ID
// tests.)
func forgedButtonValuesDecideNothing(t *testing.T, c Chat) {
	c.Daemon().Script(Touch("a", speak))
	thread := c.StartRun("touch a")
	p := c.Proposal(thread, 1)
	own := c.RefOf(p)
	for name, ref := range map[string]bots.Ref{
		"made_up_proposal": {AgentID: own.AgentID, ProposalID: "p-0123456789ab", Hash: own.Hash},
		"another_hash":     {AgentID: own.AgentID, ProposalID: own.ProposalID, Hash: "0123456789abcdef"},
	} {
		before := len(c.NotesTo(Approver))
		c.ForgeRef(Approver, thread, p, bots.ActionApprove, ref)
		c.Wait("the "+name+" refused", func() bool { return len(c.NotesTo(Approver)) > before })
	}
	noDecisionHeld(c, thread, own.ProposalID)
	c.Click(Approver, thread, p, bots.ActionApprove)
	c.Decided(thread, p, c.Shown("Approved", Approver))
}

// A mention in a channel the bot does not serve gets nothing there: not after a run
// mentioned later in a served channel is answered, nor a while after.
func unservedChannelGetsNothing(t *testing.T, c Chat) {
	c.Daemon().Script(Touch("x", speak))
	c.MentionUnserved(Approver, "touch x")
	c.Proposal(c.StartRun("touch x"), 1)
	testutil.Hold(200*time.Millisecond, func() bool { return len(c.UnservedCalls()) == 0 })
	if calls := c.UnservedCalls(); len(calls) != 0 {
		t.Errorf("the bot answered in an unserved channel: %q", calls)
	}
}
