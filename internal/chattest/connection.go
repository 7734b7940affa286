package chattest

import (
	"testing"

	"github.com/agentd/agentd/bots"
)

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
