package slack

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/bots"
	"github.com/agentd/agentd/internal/chattest"
	"github.com/agentd/agentd/internal/fakeslack"
	"github.com/agentd/agentd/internal/testutil"
)

// TestScenarios runs the scenarios both chat platforms share on Slack.
func TestScenarios(t *testing.T) {
	chattest.RunScenarios(t, func(t *testing.T) chattest.Chat { return newChat(t) })
}

// newChat is a harness whose relay can hold messages back.
func newChat(t testing.TB) *slackChat {
	e := &env{}
	held, handled := e.ForScenarios(t)
	return &slackChat{env: newEnvWith(t, e), held: held, handled: handled, sent: map[string]string{}, clicks: map[string][]string{}}
}

// slackChat is the Slack harness as the scenarios drive it.
type slackChat struct {
	*env
	held    *chattest.HoldingRelay
	handled *chattest.HandledRelay
	mu      sync.Mutex
	sent    map[string]string   // message ts → its envelope, to deliver again
	clicks  map[string][]string // user → the envelopes of their clicks
	dm      string              // the direct message's thread, once one started it
}

var slackUsers = map[chattest.User]string{chattest.Approver: approver, chattest.GroupApprover: member, chattest.Stranger: stranger,
	chattest.OtherBot: "UOTHERBOT"}

func (c *slackChat) Daemon() *chattest.Daemon      { return &c.env.Daemon }
func (c *slackChat) Platform() string              { return "slack" }
func (c *slackChat) Channel() string               { return channel }
func (c *slackChat) UserID(u chattest.User) string { return slackUsers[u] }
func (c *slackChat) StartRun(task string) string   { return c.startRun(task) }
func (c *slackChat) Restart()                      { c.restart() }
func (c *slackChat) StartTeam(workflow, task string) string {
	c.answer(c.slack.Slash(approver, channel, "/agent", "team "+workflow+" "+task))
	return c.teamThread(workflow)
}
func (c *slackChat) RoleProposal(thread, role string, step int) chattest.Msg {
	m := c.roleProposal(thread, role, step)
	return chattest.Msg{ID: m.TS, Raw: m}
}
func (c *slackChat) Team(u chattest.User, file, task string) string {
	return c.Command(u, "team "+file+" "+task)
}
func (c *slackChat) StopTeam(u chattest.User, id string) string { return c.Command(u, "team stop "+id) }
func (c *slackChat) Command(u chattest.User, text string) string {
	return c.answer(c.slack.Slash(slackUsers[u], channel, "/agent", text))
}

func (c *slackChat) Proposal(thread string, step int) chattest.Msg {
	m := c.proposal(thread, step)
	return chattest.Msg{ID: m.TS, Raw: m}
}

func (c *slackChat) Text(thread string, m chattest.Msg) string {
	c.t.Helper()
	shown := m.Raw.(fakeslack.Message)
	checkFitted(c.t, blocksOf(c.t, shown), false)
	return sectionTexts(c.t, shown)
}
func (c *slackChat) Code(text string) string    { return escapeCode(text) }
func (c *slackChat) Escaped(text string) string { return escape(text) }

func (c *slackChat) Cut(thread string, m chattest.Msg) string {
	c.t.Helper()
	shown := m.Raw.(fakeslack.Message)
	checkFitted(c.t, blocksOf(c.t, shown), true)
	return sectionTexts(c.t, shown)
}

// Refused is what the fake answered a post with instead of taking it, and any error
// the bot logged.
func (c *slackChat) Refused() []string {
	return regexp.MustCompile(`msg_too_long|invalid_blocks|msg_blocks_too_long|level=ERROR`).FindAllString(c.Logs.String(), -1)
}

func (c *slackChat) Find(thread, text string) chattest.Msg {
	c.t.Helper()
	var got fakeslack.Message
	c.wait("a message with "+text, func(v fakeslack.View) bool {
		for _, m := range v.Messages(channel, thread) {
			if strings.Contains(m.Text, text) || strings.Contains(string(m.Blocks), text) {
				got = m
				return true
			}
		}
		return false
	})
	return chattest.Msg{ID: got.TS, Raw: got}
}

func (c *slackChat) Files(thread string) map[string]string {
	out := map[string]string{}
	c.slack.Wait(0, func(v fakeslack.View) bool {
		for _, f := range v.Files() {
			if f.ThreadTS == thread {
				out[f.Name] = f.Content
			}
		}
		return true
	})
	return out
}

func (c *slackChat) Click(u chattest.User, thread string, m chattest.Msg, action string) {
	env := c.click(slackUsers[u], thread, m.Raw.(fakeslack.Message), action)
	c.mu.Lock()
	c.clicks[slackUsers[u]] = append(c.clicks[slackUsers[u]], env)
	c.mu.Unlock()
}

func (c *slackChat) ClicksAnswered(u chattest.User) {
	c.mu.Lock()
	envs := slices.Clone(c.clicks[slackUsers[u]])
	c.mu.Unlock()
	for _, env := range envs {
		c.wait("the click acked", func(v fakeslack.View) bool { _, ok := v.Acked(env); return ok })
	}
}

// Drop drops the socket; Slack queues what happens meanwhile for the next connection.
func (c *slackChat) Drop() func() {
	n := c.connectionCount()
	c.slack.Drop()
	return func() {
		c.wait("a reconnect", func(v fakeslack.View) bool { return v.Connections() > n && v.Connected() })
	}
}

func (c *slackChat) AskReconnect() {
	n := c.connectionCount()
	c.slack.Disconnect()
	c.wait("another connection", func(v fakeslack.View) bool { return v.Connections() > n && v.Connected() })
}

// connectionCount is how many socket connections the bot has opened so far.
func (c *slackChat) connectionCount() (n int) {
	c.slack.Wait(0, func(v fakeslack.View) bool { n = v.Connections(); return true })
	return n
}

const dmChannel = "D1"

func (c *slackChat) SayDirect(u chattest.User, text string) {
	_, ts := c.slack.Say(slackUsers[u], dmChannel, "im", c.dm, text, false)
	if c.dm == "" {
		c.dm = ts
	}
}

const unserved = "C999" // a channel the bot does not serve

func (c *slackChat) MentionUnserved(u chattest.User, text string) {
	c.slack.Mention(slackUsers[u], unserved, "", text)
}

// UnservedCalls is each Web API call naming the unserved channel.
func (c *slackChat) UnservedCalls() []string {
	var out []string
	for _, call := range c.slack.Calls() {
		if call.Form.Get("channel") == unserved {
			out = append(out, call.Method)
		}
	}
	return out
}

func (c *slackChat) DirectPosted() []string {
	var out []string
	c.slack.Wait(0, func(v fakeslack.View) bool {
		for _, m := range v.Messages(dmChannel, c.dm) {
			out = append(out, m.Text+"\n"+string(m.Blocks))
		}
		return true
	})
	return out
}

// ForgeClick waits for the click's ack too: the refusal may be posted before the ack
// lands, which the fake marks in time or late by Slack's own deadline.
func (c *slackChat) ForgeClick(u chattest.User, thread string, on, from chattest.Msg) {
	env := c.forgeRef(u, thread, on, bots.ActionApprove, c.RefOf(from))
	c.wait("the forged click acked in time", func(v fakeslack.View) bool { return v.AckedInTime(env) })
}

func (c *slackChat) Feedback(u chattest.User, thread string, m chattest.Msg, text string) {
	var before int
	c.slack.Wait(0, func(v fakeslack.View) bool { before = len(v.Views()); return true })
	c.Click(u, thread, m, "feedback")
	var view json.RawMessage
	c.wait("the feedback dialog", func(v fakeslack.View) bool {
		if vs := v.Views(); len(vs) == before+1 {
			view = vs[before]
			return true
		}
		return false
	})
	c.slack.Submit(slackUsers[u], view, feedbackBlock, feedbackInput, text)
}

func (c *slackChat) Say(u chattest.User, thread, text string) string {
	env, ts := c.slack.Say(slackUsers[u], channel, "channel", thread, text, u == chattest.OtherBot)
	c.mu.Lock()
	c.sent[ts] = env
	c.mu.Unlock()
	return ts
}

// LateReply is a message: Slack has no replies to one message, so the relay tells what
// it was written for by its time.
func (c *slackChat) LateReply(u chattest.User, thread string, _ chattest.Msg, text string) (string, func()) {
	deliver := c.held.Hold(text)
	return c.Say(u, thread, text), deliver
}

// TaskReply mentions the bot in the thread under the task message: Slack has no reply
// outside a thread. (One also sent to the channel is TestThreadBroadcastIsAReply.)
func (c *slackChat) TaskReply(u chattest.User, root chattest.Msg, text string) string {
	_, ts := c.slack.Mention(slackUsers[u], channel, root.ID, text)
	return ts
}

func (c *slackChat) BotMention() string { return "<@" + c.slack.BotUser + ">" }

func (c *slackChat) Edit(u chattest.User, thread, id, text string) {
	c.slack.Edit(slackUsers[u], channel, "channel", thread, id, text)
	c.handled.Handled(c.t, id, true)
}

// Answered counts u's notes: Slack answers a person with a note only they see.
func (c *slackChat) Answered(u chattest.User, text string) int {
	return chattest.Count(c.NotesTo(u), text)
}

// Redeliver retries the message's envelope as Slack does after a timeout.
func (c *slackChat) Redeliver(id string) {
	c.mu.Lock()
	env := c.sent[id]
	c.mu.Unlock()
	again := c.slack.Redeliver(env, "timeout")
	c.wait("the redelivery acked", func(v fakeslack.View) bool { return v.AckedInTime(again) })
}

func (c *slackChat) Posted(thread string) []string {
	var out []string
	c.slack.Wait(0, func(v fakeslack.View) bool {
		for _, m := range v.Messages(channel, thread) {
			out = append(out, m.Text+"\n"+string(m.Blocks))
		}
		return true
	})
	return out
}

func (c *slackChat) NotesTo(u chattest.User) []string {
	var out []string
	c.slack.Wait(0, func(v fakeslack.View) bool {
		for _, m := range v.Ephemeral(slackUsers[u]) {
			out = append(out, m.Text)
		}
		return true
	})
	return out
}

// RepliesTo is the notes only u sees in thread: Slack's ephemeral messages do not
// name the message they answer.
func (c *slackChat) RepliesTo(u chattest.User, thread, _ string) []string {
	var out []string
	c.slack.Wait(0, func(v fakeslack.View) bool {
		for _, m := range v.Ephemeral(slackUsers[u]) {
			if m.ThreadTS == thread {
				out = append(out, m.Text)
			}
		}
		return true
	})
	return out
}

// Shown is the decision as it stands in the blocks' JSON (mrkdwn bold, a mention).
func (c *slackChat) Shown(verb string, by chattest.User) string {
	if by == chattest.Anyone {
		return verb + "* by"
	}
	return verb + "* by \\u003c@" + slackUsers[by] + "\\u003e"
}

func (c *slackChat) Decided(thread string, m chattest.Msg, text string) {
	c.decided(thread, m.ID, text)
}

func (c *slackChat) Asks(thread string, m chattest.Msg) bool {
	return strings.Contains(string(c.message(thread, m.ID).Blocks), "agentd_approve")
}

func (c *slackChat) Wait(what string, cond func() bool) {
	c.t.Helper()
	if !testutil.Wait(10*time.Second, cond) {
		c.t.Fatalf("timed out waiting for %s\nlogs:\n%s", what, c.Logs.String())
	}
}

func (c *slackChat) Hold(text string) func() { return c.held.Hold(text) }

// Buttons is the action of each agentd button in m's blocks.
func (c *slackChat) Buttons(m chattest.Msg) []string {
	var blocks []struct {
		Elements []struct {
			ActionID string `json:"action_id"`
		} `json:"elements"`
	}
	json.Unmarshal(m.Raw.(fakeslack.Message).Blocks, &blocks)
	var out []string
	for _, b := range blocks {
		for _, el := range b.Elements {
			if a, ok := strings.CutPrefix(el.ActionID, "agentd_"); ok {
				out = append(out, a)
			}
		}
	}
	return out
}

func (c *slackChat) Tokens() []string {
	return []string{c.slack.BotToken, c.slack.AppToken, "fake-bot-token", "fake-app-token"}
}

func (c *slackChat) RefOf(m chattest.Msg) bots.Ref {
	ref, err := bots.ParseRef(button(c.t, m.Raw.(fakeslack.Message), bots.ActionApprove))
	if err != nil {
		c.t.Fatal(err)
	}
	return ref
}

// ForgeRef sends ref as the button's value: agent, proposal, count, hash.
func (c *slackChat) ForgeRef(u chattest.User, thread string, m chattest.Msg, action string, ref bots.Ref) {
	c.forgeRef(u, thread, m, action, ref)
}

// forgeRef is ForgeRef, returning the click's envelope.
func (c *slackChat) forgeRef(u chattest.User, thread string, m chattest.Msg, action string, ref bots.Ref) string {
	value := fmt.Sprintf("%s %s %d %s", ref.AgentID, ref.ProposalID, max(ref.Count, 1), ref.Hash)
	return c.slack.Click(slackUsers[u], channel, thread, m.ID)("agentd_"+action, value)
}
