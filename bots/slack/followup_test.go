package slack

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/bots"
	"github.com/agentd/agentd/internal/fakeslack"
)

// taskRoot waits for the bot's top-level "Task: …" message a run started by /agent run
// hangs its thread off, and returns its ts (the thread's).
func (e *env) taskRoot(task string) string {
	e.t.Helper()
	var ts string
	e.wait("the task's message in the channel", func(v fakeslack.View) bool {
		for _, m := range v.AllMessages() {
			if m.Channel == channel && m.ThreadTS == "" && strings.Contains(m.Text, "Task: "+task) {
				ts = m.TS
				return true
			}
		}
		return false
	})
	return ts
}

// TestMentionUnderTheTaskMessageSteersItsRun: Slack has no reply outside a thread, so
// what a Discord reply to the bot's "Task: …" message is here is a message in the
// thread under it, with the bot mentioned or not, or also sent to the channel. Each
// speaks to that thread's run — a decision, then a follow-up task — and starts no second
// run.
func TestMentionUnderTheTaskMessageSteersItsRun(t *testing.T) {
	e := newEnv(t)
	e.script(reply("finish", map[string]string{"reason": "nothing to do"}), reply("bots_test_touch", map[string]string{"what": "b"}))
	e.slack.Slash(approver, channel, "/agent", "run tidy up")
	root := e.taskRoot("tidy up")
	p := e.proposal(root, 1)
	e.slack.Mention(approver, channel, root, "y")
	e.decided(root, p.TS, "Approved* by \\u003c@"+approver)
	e.wait("the run's end", func(v fakeslack.View) bool { return hasText(v.Messages(channel, root), "Finished") })

	drain()
	e.slack.Broadcast(approver, channel, root, "now touch b")
	e.wait("the follow-up task", func(v fakeslack.View) bool { return hasText(v.Messages(channel, root), "New task taken: now touch b") })
	var touch fakeslack.Message
	e.wait("the follow-up's proposal", func(v fakeslack.View) bool {
		for _, m := range v.Messages(channel, root) {
			if strings.Contains(m.Text, "bots_test_touch") && strings.Contains(string(m.Blocks), "agentd_approve") {
				touch = m
				return true
			}
		}
		return false
	})
	e.click(approver, root, touch, "approve")
	if got := <-touched; got != "b" {
		t.Errorf("touched %q, want b", got)
	}
	agents, err := e.sup.API().Views.Agents(context.Background())
	if err != nil || len(agents) != 1 {
		t.Fatalf("agents = %d (%v), want the one /agent run started", len(agents), err)
	}
}

// holdingRelay hands the relay a message whose text has hold only once released: Slack
// delivering it late (a retry after the socket came back).
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
	e.slack.Say(approver, channel, "channel", thread, "also look at the docs", false)
	if got := e.answer(e.slack.Slash(approver, channel, "/agent", "stop "+e.agentOf(thread).ID)); !strings.Contains(got, "is idle") {
		t.Fatalf("/agent stop answered %q", got)
	}
	e.wait("the run's end in its thread", func(v fakeslack.View) bool {
		return hasText(v.Messages(channel, thread), "Finished: stopped by a person")
	})
	close(h.release)
	e.wait("the note to the late message's writer", func(v fakeslack.View) bool {
		for _, m := range v.Ephemeral(approver) {
			if strings.Contains(m.Text, "written while the agent was still working on its last run") {
				return true
			}
		}
		return false
	})
	if e.slack.Wait(0, func(v fakeslack.View) bool { return hasText(v.Messages(channel, thread), "New task taken") }) {
		t.Fatal("the message written before the stop started a task")
	}
	e.slack.Say(approver, channel, "channel", thread, "now tidy the docs", false)
	e.wait("the follow-up task", func(v fakeslack.View) bool {
		return hasText(v.Messages(channel, thread), "New task taken: now tidy the docs")
	})
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

// handled waits until the relay has handled the message (or edit) with ts.
func (h *handledRelay) handled(t *testing.T, ts string, edited bool) {
	t.Helper()
	for {
		select {
		case in := <-h.done:
			if in.ID == ts && in.Edited == edited {
				return
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("the relay never handled message %s (edited: %v)", ts, edited)
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
	_, y := e.slack.Say(approver, channel, "channel", thread, "y", false)
	e.decided(thread, p.TS, "Approved* by \\u003c@"+approver)
	if got := <-touched; got != "a" {
		t.Fatalf("touched %q, want a", got)
	}
	e.proposal(thread, 2) // finish, waiting: an edit to "n" must not deny it
	finish := e.agentOf(thread).Pending.ID
	_, chatter := e.slack.Say(approver2, channel, "channel", "", "lunch?", false)
	h.handled(t, chatter, false)

	edit := func(user, thread, ts, text string) {
		t.Helper()
		e.slack.Edit(user, channel, "channel", thread, ts, text)
		h.handled(t, ts, true)
	}
	edit(approver, thread, y, "n")
	edit(approver, thread, y, "n, really")
	edit(approver, thread, thread, "<@"+e.slack.BotUser+"> touch twice") // the mention the run's thread hangs off
	edit(approver2, "", chatter, "lunch at noon?")

	notes := func(user string) (n int) {
		e.slack.Wait(0, func(v fakeslack.View) bool {
			for _, m := range v.Ephemeral(user) {
				if strings.Contains(m.Text, "Edits are not read") {
					n++
				}
			}
			return true
		})
		return n
	}
	if n := notes(approver); n != 2 {
		t.Errorf("%d answers to the edits of the decision (twice) and the mention, want 2: one per message", n)
	}
	if n := notes(approver2); n != 0 {
		t.Errorf("an edit of chatter was answered %d times", n)
	}
	if n := e.decisions(finish); n != 0 {
		t.Errorf("the edits decided the waiting finish (%d decisions)", n)
	}
}
