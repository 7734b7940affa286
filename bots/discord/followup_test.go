package discord

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/bots"
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
	e.script(reply("finish", map[string]string{"reason": "nothing to do"}), reply("bots_test_touch", map[string]string{"what": "b"}))
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

	drain()
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
	e.touchedInOrder("b")

	agents, err := e.sup.API().Views.Agents(context.Background())
	if err != nil || len(agents) != 1 {
		t.Fatalf("agents = %d (%v), want the one the task message started", len(agents), err)
	}
	for _, m := range e.fake.Messages(eChannel) {
		if m.Thread != nil && m.ID != task.ID {
			t.Errorf("a second thread was started, from %q", m.Content)
		}
	}
}

// holdingRelay hands the relay a message whose text has hold only once released: a
// platform delivering it late, after what the test does meanwhile.
type holdingRelay struct {
	Relay
	hold    string
	release chan struct{}
}

func (h *holdingRelay) OnMessage(ctx context.Context, in bots.Incoming) {
	if strings.Contains(in.Text, h.hold) {
		<-h.release
	}
	h.Relay.OnMessage(ctx, in)
}

// TestStoppedRunEndsForLateMessages: a run stopped with /agent stop shows its end in its
// thread, so a message written in the thread before the stop and delivered after it
// starts no task (the person is told why); one written after the end does.
func TestStoppedRunEndsForLateMessages(t *testing.T) {
	h := &holdingRelay{hold: "also look at the docs", release: make(chan struct{})}
	e := newEnvWith(t, &env{wrap: func(r Relay) Relay { h.Relay = r; return h }})
	t.Cleanup(func() {
		select {
		case <-h.release:
		default:
			close(h.release)
		}
	})
	e.script(reply("bots_test_touch", map[string]string{"what": "a"}))
	thread := e.startRun("touch")
	e.proposal(thread, 1)
	late := e.say(uAlice, thread, "also look at the docs")
	stop, err := e.fake.Command(eChannel, uAlice, "agent", fakediscord.CommandOption{Type: 1, Name: "stop",
		Options: []fakediscord.CommandOption{{Type: 3, Name: "agent", Value: e.agentOf(thread).ID}}})
	if err != nil {
		t.Fatal(err)
	}
	e.wait("the stop's answer", func() bool { return e.original(stop, "is idle") })
	e.wait("the run's end in its thread", func() bool { return hasText(e.fake.Messages(thread), "Finished: stopped by a person") })
	close(h.release)
	e.wait("the note to the late message's writer", func() bool {
		for _, m := range e.fake.Messages(thread) {
			if m.MessageReference != nil && m.MessageReference.MessageID == late.ID &&
				strings.Contains(m.Content, "written while the agent was still working on its last run") {
				return true
			}
		}
		return false
	})
	if hasText(e.fake.Messages(thread), "New task taken") {
		t.Fatal("the message written before the stop started a task")
	}
	e.say(uAlice, thread, "now tidy the docs")
	e.wait("the follow-up task", func() bool { return hasText(e.fake.Messages(thread), "New task taken: now tidy the docs") })
}

// notesTo counts the bot's messages in channel that reply to message id saying text.
func (e *env) notesTo(channel, id, text string) int {
	n := 0
	for _, m := range e.fake.Messages(channel) {
		if m.Author.ID == e.fake.BotUser().ID && m.MessageReference != nil && m.MessageReference.MessageID == id && strings.Contains(m.Content, text) {
			n++
		}
	}
	return n
}

// handledRelay tells of each message the relay has finished handling.
type handledRelay struct {
	Relay
	done chan bots.Incoming
}

func (h *handledRelay) OnMessage(ctx context.Context, in bots.Incoming) {
	h.Relay.OnMessage(ctx, in)
	h.done <- in
}

// handled waits until the relay has handled the message (or edit) with id.
func (h *handledRelay) handled(t *testing.T, id string, edited bool) {
	t.Helper()
	for {
		select {
		case in := <-h.done:
			if in.ID == id && in.Edited == edited {
				return
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("the relay never handled message %s (edited: %v)", id, edited)
		}
	}
}

// TestEditsAreAnsweredNotRead: an edit of a message the relay read — a decision in a
// run's thread, the mention that started the run — changes nothing and is answered, once
// per message: edits are not read, send a new message. An edit of chatter is left alone.
func TestEditsAreAnsweredNotRead(t *testing.T) {
	h := &handledRelay{done: make(chan bots.Incoming, 64)}
	e := newEnvWith(t, &env{wrap: func(r Relay) Relay { h.Relay = r; return h }})
	e.script(reply("bots_test_touch", map[string]string{"what": "a"}))
	thread := e.startRun("touch")
	p := e.proposal(thread, 1)
	drain()
	y := e.say(uAlice, thread, "y")
	e.decided(p.ID, "Approved** by <@"+uAlice.ID+">")
	e.touchedInOrder("a")
	e.proposal(thread, 2) // finish, waiting: an edit to "n" must not deny it
	finish := e.agentOf(thread).Pending.ID
	chatter := e.say(uCarol, eChannel, "lunch?")

	edit := func(u fakediscord.User, id, text string) {
		t.Helper()
		if _, err := e.fake.EditMessage(id, u, text); err != nil {
			t.Fatal(err)
		}
		h.handled(t, id, true)
	}
	edit(uAlice, y.ID, "n")
	edit(uAlice, y.ID, "n, really")
	edit(uAlice, thread, "<@"+e.fake.BotUser().ID+"> touch twice")
	edit(uCarol, chatter.ID, "lunch at noon?")

	const note = "Edits are not read"
	e.wait("the answers to the edits", func() bool {
		return e.notesTo(thread, y.ID, note) > 0 && e.notesTo(eChannel, thread, note) > 0
	})
	if n := e.notesTo(thread, y.ID, note); n != 1 {
		t.Errorf("the decision's two edits were answered %d times, want once", n)
	}
	if n := e.notesTo(eChannel, chatter.ID, note); n != 0 {
		t.Errorf("an edit of chatter was answered %d times", n)
	}
	if got, _ := e.fake.Message(p.ID); !strings.Contains(got.Content, "Approved** by") || e.decisions(finish) != 0 {
		t.Errorf("the edits decided something: step 1 shows %q; the finish has %d decisions", got.Content, e.decisions(finish))
	}
}
