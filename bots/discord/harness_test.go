package discord

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/bots"
	"github.com/agentd/agentd/internal/chattest"
	"github.com/agentd/agentd/internal/fakediscord"
)

// The end-to-end tests run the real relay, the real supervisor with the fake Ollama,
// and this bot on the real discordgo against the loopback fake. Not parallel:
// discordgo's endpoints are process-wide.

const (
	eGuild   = "300000000000000001"
	eChannel = "300000000000000002"
	eRole    = "300000000000000003"
	eDM      = "300000000000000004"
	eOther   = "300000000000000005" // a channel the bot does not serve
)

var (
	uAlice = fakediscord.User{ID: "400000000000000001", Username: "alice"} // approver by user ID
	uCarol = fakediscord.User{ID: "400000000000000002", Username: "carol"} // approver by role
	uBob   = fakediscord.User{ID: "400000000000000003", Username: "bob"}   // not an approver
	uRobot = fakediscord.User{ID: "400000000000000004", Username: "robot", Bot: true}
)

type env struct {
	chattest.Daemon
	t    testing.TB
	fake *fakediscord.Server
	bot  *Bot

	mu  sync.Mutex
	ins map[string][]fakediscord.Interaction // each user's clicks, dialogs and commands, for NotesTo
}

func newEnv(t testing.TB, mod ...func(*bots.Options)) *env { return newEnvWith(t, &env{}, mod...) }

// newEnvWith is newEnv for an env whose teamsDir and onChat are set.
func newEnvWith(t testing.TB, e *env, mod ...func(*bots.Options)) *env {
	e.t = t
	e.Init(t)
	e.fake = fakediscord.Start(t, fakediscord.Config{
		HeartbeatInterval: 200 * time.Millisecond,
		Guilds: []fakediscord.Guild{{
			ID: eGuild, Name: "home", Roles: []fakediscord.Role{{ID: eRole, Name: "approver", Permissions: "0"}},
			Channels: []fakediscord.Channel{{ID: eChannel, Name: "agents"}, {ID: eOther, Name: "random"}},
			Members:  []fakediscord.Member{{User: &uAlice}, {User: &uCarol, Roles: []string{eRole}}, {User: &uBob}},
		}},
	})
	e.fake.AddChannel(fakediscord.Channel{ID: eDM, Type: fakediscord.ChannelDM, Recipients: []fakediscord.User{uAlice}})
	e.fake.Use(t)
	e.Opt = bots.Options{ApproveN: 3, RetryBackoff: func(int) time.Duration { return 50 * time.Millisecond }}
	for _, m := range mod {
		m(&e.Opt)
	}
	e.start()
	t.Cleanup(e.stop)
	return e
}

// reply is a model reply proposing command name with args; what it says needs escaping.
func reply(name string, args any) string {
	return chattest.Reply(name, args, "I will "+name+" **now** @everyone")
}

func (e *env) start() {
	e.Start(func(relay *bots.Relay, to bots.Handler, log *slog.Logger) func(context.Context) {
		bot, err := New(Options{Token: e.fake.Token(), Guilds: []string{eGuild}, Relay: to, Log: log,
			Watchdog: time.Second, Backoff: func(int) time.Duration { return 50 * time.Millisecond }})
		if err != nil {
			e.t.Fatal(err)
		}
		relay.Add(bot, bots.Rules{
			Teams:     []string{eGuild},
			Channels:  map[string]bots.Access{eChannel: {}},
			DM:        true,
			Approvers: bots.Access{Users: []string{uAlice.ID}, Groups: []string{eRole}},
		})
		e.bot = bot
		return func(ctx context.Context) { bot.Run(ctx) }
	})
	e.wait("the bot to connect and register /agent", func() bool {
		return e.bot.Status().State == bots.StateConnected && len(e.fake.Commands(eGuild)) == 1
	})
	e.settle()
}

// settle waits out discordgo's race right after Open (see fakediscord.Settle).
func (e *env) settle() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.fake.Settle(ctx); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) stop() {
	if !e.Running() {
		return
	}
	e.checkNoPreviews()
	e.checkAcksInTime()
	e.settle()
	e.Stop()
}

func (e *env) restart() {
	e.stop()
	e.start()
}

// wait waits until cond holds; the fake's state changes only with calls to it, so it
// re-checks on each new one (and every 50 ms, for the daemon's side).
func (e *env) wait(what string, cond func() bool) {
	e.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			e.t.Fatalf("timed out waiting for %s\nlogs:\n%s", what, e.Logs.String())
		}
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		e.fake.WaitCallFrom(ctx, e.fake.CallCount(), func(fakediscord.Call) bool { return true })
		cancel()
	}
}

// startRun mentions the bot with a task in the channel and returns the run's thread
// (a thread started from the mention has its ID).
func (e *env) startRun(task string) string {
	e.t.Helper()
	m, err := e.fake.Post(eChannel, uAlice, "<@"+e.fake.BotUser().ID+"> "+task)
	if err != nil {
		e.t.Fatal(err)
	}
	e.wait("the run's first note", func() bool { return hasText(e.fake.Messages(m.ID), "is on it") })
	return m.ID
}

// contentsOf is each message's content.
func contentsOf(ms []fakediscord.Message) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Content
	}
	return out
}

func hasText(ms []fakediscord.Message, s string) bool  { return chattest.Has(contentsOf(ms), s) }
func countText(ms []fakediscord.Message, s string) int { return chattest.Count(contentsOf(ms), s) }

// touch is a model reply proposing the test command bots_test_touch of what.
func touch(what string) string {
	return reply(chattest.TouchCommand, map[string]string{"what": what})
}

// touchRun starts a run on task whose first proposal touches what, and returns the run's
// thread and that proposal's message.
func (e *env) touchRun(task, what string) (string, fakediscord.Message) {
	e.t.Helper()
	e.Script(touch(what))
	thread := e.startRun(task)
	return thread, e.proposal(thread, 1)
}

// proposal waits for the proposal message of step in thread.
func (e *env) proposal(thread string, step int) fakediscord.Message {
	e.t.Helper()
	var got fakediscord.Message
	e.wait(fmt.Sprintf("proposal %d", step), func() bool {
		for _, m := range e.fake.Messages(thread) {
			if strings.Contains(m.Content, fmt.Sprintf("Step %d: ", step)) {
				got = m
				return true
			}
		}
		return false
	})
	return got
}

// customID returns the custom_id of the button for action on m.
func customID(t testing.TB, m fakediscord.Message, action Action) string {
	t.Helper()
	for _, c := range buttonIDs(m) {
		if id, err := ParseCustomID(c); err == nil && id.Action == action {
			return c
		}
	}
	t.Fatalf("no %s button on %q", action, m.Content)
	return ""
}

func (e *env) click(u fakediscord.User, thread string, m fakediscord.Message, action Action) fakediscord.Interaction {
	e.t.Helper()
	in, err := e.fake.Click(thread, m.ID, u, customID(e.t, m, action))
	if err != nil {
		e.t.Fatal(err)
	}
	return in
}

func (e *env) say(u fakediscord.User, channel, text string) fakediscord.Message {
	e.t.Helper()
	m, err := e.fake.Post(channel, u, text)
	if err != nil {
		e.t.Fatal(err)
	}
	return m
}

// decided waits until the proposal message shows text (the decision) and no buttons.
func (e *env) decided(id, text string) fakediscord.Message {
	e.t.Helper()
	var got fakediscord.Message
	e.wait("the decision on "+id+": "+text, func() bool {
		got, _ = e.fake.Message(id)
		return strings.Contains(got.Content, text)
	})
	if len(got.Components) != 0 {
		e.t.Errorf("a decided proposal still has buttons: %s", got.Components)
	}
	return got
}

// ephemerals returns the ephemeral notes the bot sent in answer to in (response or
// follow-ups).
func (e *env) ephemerals(in fakediscord.Interaction) []string {
	var out []string
	for _, c := range e.fake.Calls() {
		if c.Method != "POST" || !(strings.Contains(c.Path, in.ID+"/"+in.Token) || strings.Contains(c.Path, "/webhooks/") && strings.Contains(c.Path, in.Token)) {
			continue
		}
		var body struct {
			Type int `json:"type"`
			Data struct {
				Content string `json:"content"`
				Flags   int    `json:"flags"`
			} `json:"data"`
			Content string `json:"content"`
			Flags   int    `json:"flags"`
		}
		c.Decode(&body)
		switch {
		case body.Data.Flags&fakediscord.FlagEphemeral != 0:
			out = append(out, body.Data.Content)
		case body.Flags&fakediscord.FlagEphemeral != 0:
			out = append(out, body.Content)
		}
	}
	return out
}

func (e *env) agentOf(thread string) *api.Agent { return e.AgentOf(Platform, eChannel, thread) }

// noDecisionHeld checks, for a while, that proposal id waits undecided in thread.
func (e *env) noDecisionHeld(thread, id string) { e.NoDecisionHeld(Platform, eChannel, thread, id) }

func (e *env) modelSaw(text string) {
	e.t.Helper()
	e.wait("the model to see "+text, func() bool { return e.ModelSaw(text) })
}

// checkNoPreviews fails the test when any message the bot made — posts, edits,
// interaction answers, follow-ups — went without SUPPRESS_EMBEDS or had a link a real
// Discord would have fetched to show its preview.
func (e *env) checkNoPreviews() {
	for _, m := range e.fake.AllMessages() {
		if m.Author.ID != e.fake.BotUser().ID {
			continue
		}
		if m.Flags&fakediscord.FlagSuppressEmbeds == 0 || len(m.Previewed) > 0 {
			e.t.Errorf("bot message %s without SUPPRESS_EMBEDS (flags %d, previewed %v): %.80q", m.ID, m.Flags, m.Previewed, m.Content)
		}
	}
}

// checkAcksInTime fails the test when any interaction was answered after Discord's 3 s
// (the fake answers 10062 Unknown interaction then, as Discord does).
func (e *env) checkAcksInTime() {
	for _, c := range e.fake.Calls() {
		if c.Code == fakediscord.CodeUnknownInteraction {
			e.t.Errorf("an interaction was answered after Discord's deadline: %s %s", c.Method, c.Path)
		}
	}
}

// buttonIDs is the custom ID of each of m's buttons.
func buttonIDs(m fakediscord.Message) []string {
	var out []string
	for _, raw := range m.Components {
		var row struct {
			Components []struct {
				CustomID string `json:"custom_id"`
			} `json:"components"`
		}
		json.Unmarshal(raw, &row)
		for _, c := range row.Components {
			out = append(out, c.CustomID)
		}
	}
	return out
}
