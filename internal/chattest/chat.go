// Package chattest is test support for the chat front ends: one table of scenarios
// (Scenarios) that bots/slack's tests run on internal/fakeslack with the real slack-go
// and bots/discord's on internal/fakediscord with the real discordgo, each through its
// harness's Chat. Beside it, what both harnesses share: the daemon they run against
// (Daemon: real store, supervisor, relay, fake Ollama answering from a script), the test
// commands (touch, echo) and the relays a test puts before the real one.
package chattest

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/bots"
)

// User is a person in the scenarios; each harness maps it to one of its fake's users.
type User int

const (
	// Anyone stands for whoever decided, where a scenario does not care.
	Anyone User = iota - 1
	// Approver is an approver by user ID.
	Approver
	// GroupApprover is an approver through a group (a Slack user group, a Discord role).
	GroupApprover
	// Stranger is not an approver.
	Stranger
	// OtherBot is another bot (an integration) in the channel: the relay ignores it.
	OtherBot
)

// Msg is a proposal message as the harness found it: ID names it on the platform, Raw is
// the fake's own message (its buttons), for the harness.
type Msg struct {
	ID  string
	Raw any
}

// Chat is a chat platform's harness, running the real bot against its loopback fake and
// a Daemon. Methods that wait fail the test when what they wait for does not come.
type Chat interface {
	Daemon() *Daemon
	// Platform names the platform as bindings and the audit log do; Channel is the
	// channel runs start in; UserID is u's ID on the platform.
	Platform() string
	Channel() string
	UserID(u User) string

	// StartRun mentions the bot with a task and returns the run's thread, once the run's
	// first note is there.
	StartRun(task string) (thread string)
	// Proposal waits for the proposal of step in thread.
	Proposal(thread string, step int) Msg
	// StartTeam starts a team run of workflow with task as Approver (/agent team) and
	// returns its thread; RoleProposal waits for the proposal of role's step there.
	StartTeam(workflow, task string) (thread string)
	RoleProposal(thread, role string, step int) Msg
	// Team asks for a team run of file with task as u (/agent team) and returns the
	// bot's answer; StopTeam stops team run id as u (/agent team stop) and returns it.
	Team(u User, file, task string) string
	StopTeam(u User, id string) string
	// Find waits for a message in thread whose text has text in it.
	Find(thread, text string) Msg
	// Files is each file uploaded into thread, by name: its content.
	Files(thread string) map[string]string
	// Click clicks m's button for action (bots.ActionApprove, …) as u.
	Click(u User, thread string, m Msg, action string)
	// ForgeClick clicks, as u, on message on in thread, a button carrying the approve
	// button's value of message from (another run's): what a forged payload does.
	ForgeClick(u User, thread string, on, from Msg)
	// ClicksAnswered waits until each click u made was answered as the platform
	// requires (Slack: its envelope acked; Discord: a deferred update, type 6).
	ClicksAnswered(u User)
	// RefOf is what m's approve button names; ForgeRef clicks, as u, on m in thread, a
	// button for action carrying ref in the platform's encoding: a forged payload.
	RefOf(m Msg) bots.Ref
	ForgeRef(u User, thread string, m Msg, action string, ref bots.Ref)
	// Feedback opens m's feedback dialog by its button as u and submits text.
	Feedback(u User, thread string, m Msg, text string)
	// Say writes text into thread (or a channel) as u and returns the message's ID.
	Say(u User, thread, text string) (id string)
	// LateReply writes text into thread as u now, as a reply to m where the platform has
	// replies (Discord), and returns its ID; the bot is handed it only once deliver is
	// called: the platform delivering it late.
	LateReply(u User, thread string, m Msg, text string) (id string, deliver func())
	// TaskReply answers the bot's "Task: …" message root in the channel as u, the
	// platform's closest form of a reply to it, and returns the answer's ID.
	TaskReply(u User, root Msg, text string) (id string)
	// BotMention is how a message mentions the bot.
	BotMention() string
	// Edit edits message id (in thread; "" for the channel) as u to text, and returns
	// once the relay has handled the edit.
	Edit(u User, thread, id, text string)
	// Redeliver has the platform deliver message id again, as it does after a timeout or
	// a resumed connection, and returns once the bot has taken it.
	Redeliver(id string)
	// Drop drops the bot's connection; the platform holds what happens meanwhile until
	// the bot is back, which reconnected waits for. AskReconnect has the platform ask
	// the bot to reconnect (Slack's disconnect request, Discord's op 7) and returns
	// once it has a new connection.
	Drop() (reconnected func())
	AskReconnect()
	// SayDirect writes text to the bot in a direct message as u (on Slack, in the thread
	// the first one started); DirectPosted is each message the bot posted there.
	SayDirect(u User, text string)
	DirectPosted() []string
	// MentionUnserved mentions the bot with text as u in a channel it does not serve;
	// UnservedCalls is each call the bot made about that channel.
	MentionUnserved(u User, text string)
	UnservedCalls() []string
	// Command runs the slash command /agent text as u and returns its answer.
	Command(u User, text string) string
	// Restart stops the bot and the daemon and starts them again on the same state.
	Restart()
	// Hold holds the messages with text in them before the relay until release: the
	// platform delivers them late.
	Hold(text string) (release func())

	// Posted is the text of each message in thread ("" for the channel), as shown.
	Posted(thread string) []string
	// NotesTo is every note only u was shown (ephemeral answers).
	NotesTo(u User) []string
	// RepliesTo is what the bot answered u's message id in thread with (Slack: the notes
	// only u sees in the thread; Discord: the replies to the message).
	RepliesTo(u User, thread, id string) []string
	// Answered is how many of the bot's answers to u (notes only u sees, replies to u's
	// messages) say text.
	Answered(u User, text string) int
	// Shown is how a decision reads on a decided proposal: verb by u.
	Shown(verb string, by User) string
	// Decided waits until m shows text (its decision), and fails when it still has buttons.
	Decided(thread string, m Msg, text string)
	// HostileText is model text that tries every way the platform has to ping, link or
	// hide; LiveMarkup lists what of it stands live anywhere the bot wrote (messages, their
	// edits, notes to one person, files).
	HostileText() string
	LiveMarkup() []string
	// Text is the text m shows now, its markup as the platform reads it, once checked
	// against the platform's limits and rules (nothing cut, code fences closed, nothing
	// that pings); Code is how text reads inside a code block there.
	Text(thread string, m Msg) string
	Code(text string) string
	// Escaped is how plain text reads in a message, escaped as the platform needs it.
	Escaped(text string) string
	// Cut is the text m shows now, checked as Text is but for a message the relay had
	// to cut: it must say so where the platform shows it (a note, the full text
	// attached). Refused is each post, edit or upload the fake refused, as the
	// platform says it.
	Cut(thread string, m Msg) string
	Refused() []string
	// Buttons is the action (bots.ActionApprove, …) of each button m was posted with.
	Buttons(m Msg) []string
	// Tokens is each secret the bot was given: none may reach the logs.
	Tokens() []string
	// Asks reports whether m has its buttons.
	Asks(thread string, m Msg) bool
	// Wait waits until cond holds.
	Wait(what string, cond func() bool)
}

// Scenario is a case both platforms run.
type Scenario struct {
	Name string
	Run  func(t *testing.T, c Chat)
}

// RunScenarios runs every scenario against a fresh harness from newChat.
func RunScenarios(t *testing.T, newChat func(t *testing.T) Chat) {
	for _, s := range Scenarios {
		t.Run(s.Name, func(t *testing.T) { s.Run(t, newChat(t)) })
	}
}

// Count is how many of ss contain s.
func Count(ss []string, s string) int {
	n := 0
	for _, x := range ss {
		if strings.Contains(x, s) {
			n++
		}
	}
	return n
}

// Has reports whether one of ss contains s.
func Has(ss []string, s string) bool {
	return slices.ContainsFunc(ss, func(x string) bool { return strings.Contains(x, s) })
}

// BenchApprovalRoundTrip measures an Approve click on the platform's loopback fake until
// the approved command starts: the platform's delivery → its client library → the relay
// → Decide → the agent loop → the command. The target is p99 ≤ 50 ms; figures are
// reported (p50-ms, p99-ms), never checked.
func BenchApprovalRoundTrip(b *testing.B, c Chat) {
	for i := 0; i < b.N; i++ {
		c.Daemon().Script(Touch("bench", speak))
	}
	thread := c.StartRun("benchmark")
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		p := c.Proposal(thread, i+1)
		Drain()
		b.StartTimer()
		start := time.Now()
		c.Click(Approver, thread, p, bots.ActionApprove)
		select {
		case <-Touched:
		case <-time.After(10 * time.Second):
			logs := c.Daemon().Logs.String()
			b.Fatalf("step %d: the command never started\n%s", i+1, logs[max(0, len(logs)-6000):])
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(lat)
	pct := func(q float64) float64 {
		return float64(lat[min(len(lat)-1, int(q*float64(len(lat))))].Microseconds()) / 1000
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
}
