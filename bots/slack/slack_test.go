package slack

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/bots"
	"github.com/agentd/agentd/daemon/store"
	"github.com/agentd/agentd/internal/chattest"
	"github.com/agentd/agentd/internal/fakeslack"
	"github.com/agentd/agentd/internal/testutil"
)

// What people write in a run's thread is remembered by its agent (kind chat): the task
// and feedback are, a bare "y" is not.
func TestThreadMessagesRemembered(t *testing.T) {
	e := newEnvFor(t, true)
	e.Script(touch("x"), touch("y"))
	thread := e.startRun("touch the launch pad")
	p := e.proposal(thread, 1)
	e.slack.Say(approver, channel, "channel", thread, "use the blue pad instead", false)
	e.decided(thread, p.TS, "Feedback* by \\u003c@"+approver+"\\u003e: use the blue pad instead")
	p2 := e.proposal(thread, 2)
	chattest.Drain()
	e.slack.Say(approver, channel, "channel", thread, "y", false)
	e.decided(thread, p2.TS, "Approved* by \\u003c@"+approver)
	var chat []string
	err := e.St.View(context.Background(), func(tx *store.Tx) error {
		ms, err := tx.Memories(store.MemoryFilter{AllAgents: true, Kind: "chat"})
		for _, m := range ms {
			if m.Kind == "chat" {
				chat = append(chat, m.Text+" ("+m.Source+")")
			}
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(chat)
	want := []string{"touch the launch pad (slack message from " + approver + ")", "use the blue pad instead (slack message from " + approver + ")"}
	if !slices.Equal(chat, want) {
		t.Errorf("chat memories = %q\nwant %q", chat, want)
	}
}

// Removing an agent while its proposal waits closes the proposal's message: no buttons
// are left to click.
func TestRemovedAgentsProposalClosed(t *testing.T) {
	e := newEnv(t)
	thread, p := e.touchRun("touch x", "x")
	if err := e.Sup.API().Runs.DeleteAgent(context.Background(), e.agentOf(thread).ID); err != nil {
		t.Fatal(err)
	}
	e.decided(thread, p.TS, "removed before a decision")
}

func TestAskUserAnsweredInThread(t *testing.T) {
	e := newEnv(t)
	e.Script(reply("ask_user", map[string]string{"question": "Which folder?"}))
	thread := e.startRun("ask me")
	e.wait("the question", func(v fakeslack.View) bool { return hasText(v.Messages(channel, thread), "Which folder?") })
	e.slack.Say(approver, channel, "channel", thread, "the docs folder", false)
	e.wait("the answered question", func(v fakeslack.View) bool { return hasText(v.Messages(channel, thread), "Answered by") })
	e.proposal(thread, 2)
	e.modelSaw("the docs folder")
}

// OnConnection (the connection-state metric) sees every drop and every reconnect.
// (That nothing is lost meanwhile is the dropped_connection_loses_nothing scenario.)
func TestOnConnectionSeesEveryDropAndReconnect(t *testing.T) {
	c := newChat(t)
	c.Drop()()
	c.AskReconnect()
	testutil.Wait(5*time.Second, func() bool { return len(c.connections()) >= 5 })
	if got := c.connections(); !slices.Equal(got, []bool{true, false, true, false, true}) {
		t.Errorf("OnConnection saw %v, want up, down, up, down, up", got)
	}
}

// A stranger's /agent run is acked without an answer and refused by a note only they
// see; a command from a channel the bot does not serve is told so. (What the commands
// do is the slash_commands_drive_a_run scenario.)
func TestSlashCommandRefusals(t *testing.T) {
	e := newEnv(t)
	e.unanswered(e.slack.Slash(stranger, channel, "/agent", "run something"))
	e.wait("refusal", func(v fakeslack.View) bool { return len(v.Ephemeral(stranger)) == 1 })
	if got := e.answer(e.slack.Slash(approver, unserved, "/agent", "list")); !strings.Contains(got, "do not serve") {
		t.Errorf("unserved channel = %q", got)
	}
}

func TestExpiredProposalRefusesChatDecisions(t *testing.T) {
	e := newEnv(t, func(o *bots.Options) { o.Expiry = 300 * time.Millisecond })
	thread, p := e.touchRun("touch", "x")
	e.wait("the expiry note", func(v fakeslack.View) bool { return hasText(v.Messages(channel, thread), "Expired after") })
	e.slack.Say(approver, channel, "channel", thread, "y", false)
	e.wait("refusal", func(v fakeslack.View) bool { return len(v.Ephemeral(approver)) == 1 })
	if a := e.agentOf(thread); a.Pending == nil || a.State != api.StateAwaitingDecision {
		t.Errorf("agent after expiry = %+v", a)
	}
	_ = p
}
