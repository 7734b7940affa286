package discord

import (
	"context"
	"strings"
	"testing"

	"github.com/agentd/agentd/internal/chattest"
	"github.com/agentd/agentd/internal/fakediscord"
)

// taskMessage waits for the bot's "Task: …" message in the channel that task's thread
// hangs off (a run started by /agent run has one), and returns it.
func (e *env) taskMessage(task string) fakediscord.Message {
	e.t.Helper()
	var got fakediscord.Message
	e.wait("the task's message in the channel", func() bool {
		for _, m := range e.fake.Messages(eChannel) {
			if strings.Contains(m.Content, "Task: "+task) && m.Thread != nil {
				got = m
				return true
			}
		}
		return false
	})
	return got
}

// replyTo posts text from u in the channel as a reply to m, with Discord's default ping.
func (e *env) replyTo(u fakediscord.User, m fakediscord.Message, text string) fakediscord.Message {
	e.t.Helper()
	r, err := e.fake.PostMessage(fakediscord.Message{ChannelID: m.ChannelID, Author: u, Content: text,
		MessageReference: &fakediscord.MessageReference{MessageID: m.ID, ChannelID: m.ChannelID}})
	if err != nil {
		e.t.Fatal(err)
	}
	return r
}

// TestReplyToTheTaskMessageSteersItsRun: a person replying in the channel to the bot's
// "Task: …" message — which Discord delivers with the bot among its mentions, the reply's
// default ping — speaks to that message's run as a reply in its thread does: it decides
// the proposal waiting there, or gives the idle agent a follow-up task, under the same
// approvers. It starts no second run.
func TestReplyToTheTaskMessageSteersItsRun(t *testing.T) {
	e := newEnv(t)
	e.Script(reply("finish", map[string]string{"reason": "nothing to do"}), reply("bots_test_touch", map[string]string{"what": "b"}))
	if _, err := e.fake.Command(eChannel, uAlice, "agent", fakediscord.CommandOption{Type: 1, Name: "run",
		Options: []fakediscord.CommandOption{{Type: 3, Name: "task", Value: "tidy up"}}}); err != nil {
		t.Fatal(err)
	}
	task := e.taskMessage("tidy up")
	thread := task.Thread.ID
	p := e.proposal(thread, 1)

	bob := e.replyTo(uBob, task, "y")
	e.wait("bob refused", func() bool {
		for _, m := range e.fake.Messages(eChannel) {
			if m.MessageReference != nil && m.MessageReference.MessageID == bob.ID && strings.Contains(m.Content, "not an approver") {
				return true
			}
		}
		return false
	})
	e.replyTo(uAlice, task, "y")
	e.decided(p.ID, "Approved** by <@"+uAlice.ID+">")
	e.wait("the run's end", func() bool { return hasText(e.fake.Messages(thread), "Finished") })

	chattest.Drain()
	e.replyTo(uAlice, task, "now touch b")
	e.wait("the follow-up task in the run's thread", func() bool { return hasText(e.fake.Messages(thread), "New task taken: now touch b") })
	var touch fakediscord.Message
	e.wait("the follow-up's proposal", func() bool {
		for _, m := range e.fake.Messages(thread) {
			if strings.Contains(m.Content, "Step 1: **bots\\_test\\_touch**") && len(m.Components) > 0 {
				touch = m
				return true
			}
		}
		return false
	})
	e.click(uAlice, thread, touch, ActionApprove)
	chattest.TouchedInOrder(e.t, "b")

	agents, err := e.Sup.API().Views.Agents(context.Background())
	if err != nil || len(agents) != 1 {
		t.Fatalf("agents = %d (%v), want the one the task message started", len(agents), err)
	}
	for _, m := range e.fake.Messages(eChannel) {
		if m.Thread != nil && m.ID != task.ID {
			t.Errorf("a second thread was started, from %q", m.Content)
		}
	}
}
