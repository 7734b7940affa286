package slack

import (
	"context"
	"strings"
	"testing"

	"github.com/agentd/agentd/internal/chattest"
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
	e.Script(reply("finish", map[string]string{"reason": "nothing to do"}), reply("bots_test_touch", map[string]string{"what": "b"}))
	e.slack.Slash(approver, channel, "/agent", "run tidy up")
	root := e.taskRoot("tidy up")
	p := e.proposal(root, 1)
	e.slack.Mention(approver, channel, root, "y")
	e.decided(root, p.TS, "Approved* by \\u003c@"+approver)
	e.wait("the run's end", func(v fakeslack.View) bool { return hasText(v.Messages(channel, root), "Finished") })

	chattest.Drain()
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
	if got := <-chattest.Touched; got != "b" {
		t.Errorf("touched %q, want b", got)
	}
	agents, err := e.Sup.API().Views.Agents(context.Background())
	if err != nil || len(agents) != 1 {
		t.Fatalf("agents = %d (%v), want the one /agent run started", len(agents), err)
	}
}
