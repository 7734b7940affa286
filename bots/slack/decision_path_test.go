package slack

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentd/agentd/bots"
	"github.com/agentd/agentd/internal/chattest"
	"github.com/agentd/agentd/internal/fakeslack"
)

// The chat decision path end to end on Slack: the real relay, supervisor and slack-go against the
// strict fake. /agent run under a 429 is TestSlashRunAckedUnder429. A decision in an
// archived thread has no Slack case: Slack threads do not archive, and a message in
// one can be edited as long as the channel exists (Discord's is
// TestDecisionLandsInArchivedThread).

// A `y` written while P1 was shown reaches the bot only once P1 was decided elsewhere
// (agentctl) and P2 waits: the socket was down and its reconnect rate limited. By its
// ts it answers P1, so it decides nothing, P2 is not run, and its writer is told.
func TestLateReplyForEarlierProposalDecidesNothing(t *testing.T) {
	e := newEnv(t)
	e.Script(touch("a"), touch("b"))
	thread := e.startRun("touch twice")
	e.proposal(thread, 1)
	p1 := e.agentOf(thread)
	chattest.Drain()

	yts := e.sayWhileDown(3, approver2, thread, "y")
	e.approveInAgentctl(p1.ID, p1.Pending.ID)
	p2 := e.proposal(thread, 2)
	if !e.slack.Wait(0, func(v fakeslack.View) bool { return !v.Connected() }) {
		t.Fatal("the bot reconnected before P2 was posted; the reply is not late")
	}
	if !bots.DecimalBefore(yts, p2.TS) {
		t.Fatalf("the reply (%s) is not older than P2 (%s)", yts, p2.TS)
	}
	e.wait("the note to its writer", func(v fakeslack.View) bool {
		for _, m := range v.Ephemeral(approver2) {
			if strings.Contains(m.Text, "That reply was for an earlier proposal (step 1), so it decided nothing; the agent now waits on step 2") {
				return true
			}
		}
		return false
	})
	pending := e.agentOf(thread).Pending.ID
	e.noDecisionHeld(thread, pending)
	if got := <-chattest.Touched; got != "a" {
		t.Errorf("touched %q, want P1's a", got)
	}
	chattest.NoCommandRan(t)
	button(t, e.message(thread, p2.TS), "approve") // P2 still asks
}

// sectionTexts is the text of every section and context block of a posted message.
func sectionTexts(t testing.TB, m fakeslack.Message) string {
	t.Helper()
	var b strings.Builder
	for _, bl := range shownBlocks(t, m.Blocks) {
		b.WriteString(bl.Text + "\n")
	}
	return b.String()
}

// shownBlock is one block of a message as Slack shows it: its type and its text (a
// section's, or a context's strings, one a line).
type shownBlock struct{ Type, Text string }

// shownBlocks decodes a message's blocks (JSON) into what each shows.
func shownBlocks(t testing.TB, js []byte) []shownBlock {
	t.Helper()
	var raw []struct {
		Type string `json:"type"`
		Text struct {
			Text string `json:"text"`
		} `json:"text"`
		Elements []struct {
			Text any `json:"text"` // a context's is a string; a button's, an object
		} `json:"elements"`
	}
	if err := json.Unmarshal(js, &raw); err != nil {
		t.Fatal(err)
	}
	out := make([]shownBlock, len(raw))
	for i, b := range raw {
		out[i] = shownBlock{Type: b.Type, Text: b.Text.Text}
		if b.Type == "context" {
			var lines []string
			for _, el := range b.Elements {
				if s, ok := el.Text.(string); ok {
					lines = append(lines, s)
				}
			}
			out[i].Text = strings.Join(lines, "\n")
		}
	}
	return out
}

// A reply also sent to the channel (subtype thread_broadcast) is a reply in its thread
// like any other: its "y" approves the proposal waiting there.
func TestThreadBroadcastIsAReply(t *testing.T) {
	e := newEnv(t)
	thread, p := e.touchRun("touch once", "a")
	chattest.Drain()
	e.slack.Broadcast(approver, channel, thread, "y")
	e.decided(thread, p.TS, "Approved* by \\u003c@"+approver)
	if got := <-chattest.Touched; got != "a" {
		t.Errorf("touched %q, want a", got)
	}
}

// Feedback written while the run's proposal waited, delivered late (the socket was down)
// after it and the finish were approved in agentctl and the run ended, starts no new task: it
// was written before the finish note. A message written after the note does.
func TestLateTextAfterTheRunEndedStartsNothing(t *testing.T) {
	e := newEnv(t)
	e.Script(touch("a")) // then finish
	thread := e.startRun("touch once")
	e.proposal(thread, 1)
	a := e.agentOf(thread)
	chattest.Drain()

	e.sayWhileDown(4, approver, thread, "also look at the docs folder")
	e.approveInAgentctl(a.ID, a.Pending.ID)
	if got := <-chattest.Touched; got != "a" {
		t.Errorf("touched %q, want a", got)
	}
	e.proposal(thread, 2) // finish, approved too
	e.approveInAgentctl(a.ID, e.agentOf(thread).Pending.ID)
	e.wait("the finish note", func(v fakeslack.View) bool { return hasText(v.Messages(channel, thread), "Finished") })
	if !e.slack.Wait(0, func(v fakeslack.View) bool { return !v.Connected() }) {
		t.Fatal("the bot reconnected before the run finished; the feedback is not late")
	}
	e.wait("the note to its writer", func(v fakeslack.View) bool {
		for _, m := range v.Ephemeral(approver) {
			if strings.Contains(m.Text, "That was written while the agent was still working on its last run, so it started nothing") {
				return true
			}
		}
		return false
	})
	if e.slack.Wait(0, func(v fakeslack.View) bool { return hasText(v.Messages(channel, thread), "New task taken") }) {
		t.Fatal("the late feedback started a new task")
	}
	e.slack.Say(approver, channel, "channel", thread, "now tidy the docs", false)
	e.wait("the follow-up task", func(v fakeslack.View) bool {
		return hasText(v.Messages(channel, thread), "New task taken: now tidy the docs")
	})
}
