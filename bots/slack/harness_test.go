package slack

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/bots"
	"github.com/agentd/agentd/internal/chattest"
	"github.com/agentd/agentd/internal/fakeslack"
	"github.com/agentd/agentd/internal/testutil"
)

// Users in the tests.
const (
	approver  = "UAPPROVER"
	approver2 = "UAPPROVER2"
	member    = "UMEMBER" // in the SOPS user group
	stranger  = "USTRANGER"
	channel   = "C1"
)

type env struct {
	chattest.Daemon
	t     testing.TB
	slack *fakeslack.Fake
	bot   *Bot

	connMu sync.Mutex
	conns  []bool // what Options.OnConnection was told, in order
}

// connections returns what Options.OnConnection was told so far.
func (e *env) connections() []bool {
	e.connMu.Lock()
	defer e.connMu.Unlock()
	return slices.Clone(e.conns)
}

func newEnv(t testing.TB, mod ...func(*bots.Options)) *env { return newEnvFor(t, false, mod...) }

// newEnvFor is newEnv with long-term memory on or off.
func newEnvFor(t testing.TB, withMemory bool, mod ...func(*bots.Options)) *env {
	return newEnvWith(t, &env{Daemon: chattest.Daemon{Memory: withMemory}}, mod...)
}

// newEnvWith is newEnv for an env whose memory and commands fields are set.
func newEnvWith(t testing.TB, e *env, mod ...func(*bots.Options)) *env {
	e.t, e.slack = t, fakeslack.NewFake(t)
	e.Init(t)
	e.slack.SetGroup("SOPS", member)
	e.Opt = bots.Options{ApproveN: 3}
	for _, m := range mod {
		m(&e.Opt)
	}
	e.start()
	t.Cleanup(func() {
		e.stop()
		e.checkChatRules() // in every test, whatever it posted
	})
	return e
}

// reply is a model reply proposing command name with args; what it says needs escaping.
func reply(name string, args any) string {
	return chattest.Reply(name, args, "I will "+name+" <now> & then")
}

func (e *env) start() {
	e.Start(func(relay *bots.Relay, to bots.Handler, log *slog.Logger) func(context.Context) {
		bot, err := New(Options{BotToken: e.slack.BotToken, AppToken: e.slack.AppToken, APIURL: e.slack.APIURL(), Relay: to, Log: log,
			PingInterval: 2 * time.Second, Backoff: func(int) time.Duration { return 50 * time.Millisecond },
			OnConnection: func(up bool) { e.connMu.Lock(); e.conns = append(e.conns, up); e.connMu.Unlock() }})
		if err != nil {
			e.t.Fatal(err)
		}
		relay.Add(bot, bots.Rules{
			Teams:     []string{e.slack.Team},
			Channels:  map[string]bots.Access{channel: {}},
			DM:        true,
			Approvers: bots.Access{Users: []string{approver, approver2}, Groups: []string{"SOPS"}},
		})
		e.bot = bot
		return func(ctx context.Context) { bot.Run(ctx) }
	})
	if !e.slack.Wait(5*time.Second, func(v fakeslack.View) bool { return v.Connected() }) {
		e.t.Fatal("the bot never connected to the fake")
	}
}

func (e *env) stop() { e.Stop() }

func (e *env) restart() {
	e.Stop()
	e.start()
}

func (e *env) wait(what string, cond func(v fakeslack.View) bool) {
	e.t.Helper()
	if !e.slack.Wait(10*time.Second, cond) {
		e.t.Fatalf("timed out waiting for %s\nlogs:\n%s", what, e.Logs.String())
	}
}

// startRun mentions the bot with a task and returns the run's thread.
func (e *env) startRun(task string) string {
	e.t.Helper()
	_, ts := e.slack.Mention(approver, channel, "", task)
	e.wait("the run's first note", func(v fakeslack.View) bool { return hasText(v.Messages(channel, ts), "is on it") })
	return ts
}

func hasText(ms []fakeslack.Message, s string) bool {
	for _, m := range ms {
		if strings.Contains(m.Text, s) || strings.Contains(string(m.Blocks), s) {
			return true
		}
	}
	return false
}

// touch is a model reply proposing the test command bots_test_touch of what.
func touch(what string) string {
	return reply(chattest.TouchCommand, map[string]string{"what": what})
}

// touchRun starts a run on task whose first proposal touches what, and returns the run's
// thread and that proposal's message.
func (e *env) touchRun(task, what string) (string, fakeslack.Message) {
	e.t.Helper()
	e.Script(touch(what))
	thread := e.startRun(task)
	return thread, e.proposal(thread, 1)
}

// sayWhileDown drops the socket, holding its reconnect for secs seconds, and has user
// write text in thread meanwhile: Slack delivers it once the bot is back. It returns the
// message's ts.
func (e *env) sayWhileDown(secs int, user, thread, text string) string {
	e.slack.RateLimitNext("apps.connections.open", secs)
	e.slack.Drop()
	_, ts := e.slack.Say(user, channel, "channel", thread, text, false)
	return ts
}

// approveInAgentctl approves proposal of agent as alice does in agentctl.
func (e *env) approveInAgentctl(agent, proposal string) {
	e.t.Helper()
	if _, err := e.Sup.API().Decisions.Decide(context.Background(), agent, api.DecideRequest{ProposalID: proposal,
		Kind: api.DecisionApprove, Count: 1, By: "alice", Source: "agentctl"}); err != nil {
		e.t.Fatal(err)
	}
}

// proposal waits for the proposal message of step in thread.
func (e *env) proposal(thread string, step int) fakeslack.Message {
	e.t.Helper()
	var got fakeslack.Message
	e.wait(fmt.Sprintf("proposal %d", step), func(v fakeslack.View) bool {
		for _, m := range v.Messages(channel, thread) {
			if strings.Contains(m.Text, fmt.Sprintf("Step %d:", step)) {
				got = m
				return true
			}
		}
		return false
	})
	return got
}

// message returns the current state of the message ts in thread.
func (e *env) message(thread, ts string) fakeslack.Message {
	var got fakeslack.Message
	e.slack.Wait(0, func(v fakeslack.View) bool {
		for _, m := range v.Messages(channel, thread) {
			if m.TS == ts {
				got = m
			}
		}
		return true
	})
	return got
}

// button returns the value of the button action on m.
func button(t testing.TB, m fakeslack.Message, action string) string {
	t.Helper()
	var blocks []struct {
		Elements []struct {
			ActionID string `json:"action_id"`
			Value    string `json:"value"`
		} `json:"elements"`
	}
	json.Unmarshal(m.Blocks, &blocks)
	for _, b := range blocks {
		for _, el := range b.Elements {
			if el.ActionID == "agentd_"+action {
				return el.Value
			}
		}
	}
	t.Fatalf("no %s button on %s", action, m.Blocks)
	return ""
}

func (e *env) click(user, thread string, m fakeslack.Message, action string) string {
	return e.slack.Click(user, channel, thread, m.TS)("agentd_"+action, button(e.t, m, action))
}

// decided waits until the proposal message ts shows text (the decision).
func (e *env) decided(thread, ts, text string) fakeslack.Message {
	e.t.Helper()
	var got fakeslack.Message
	e.wait("the decision on "+ts+": "+text, func(v fakeslack.View) bool {
		for _, m := range v.Messages(channel, thread) {
			if m.TS == ts && strings.Contains(string(m.Blocks), text) {
				got = m
				return true
			}
		}
		return false
	})
	if strings.Contains(string(got.Blocks), "agentd_approve") {
		e.t.Errorf("a decided proposal still has buttons: %s", got.Blocks)
	}
	return got
}

func (e *env) agentOf(thread string) *api.Agent { return e.AgentOf("slack", channel, thread) }

// modelSaw waits until a model request carries text.
func (e *env) modelSaw(text string) {
	e.t.Helper()
	e.wait("the model to see "+text, func(fakeslack.View) bool { return e.ModelSaw(text) })
}

// answer waits for the answer to the slash command sent as env: it was acked in time and
// empty, and the answer came through its response_url, ephemeral. (The ack is queued
// before the answer is, but slack-go writes it from its own goroutine: it may land a
// moment after.)
func (e *env) answer(env string) string {
	e.t.Helper()
	var got []fakeslack.Response
	e.wait("the answer to "+env, func(v fakeslack.View) bool { got = v.Responses(env); return len(got) > 0 })
	e.wait("the ack of "+env, func(v fakeslack.View) bool { _, ok := v.Acked(env); return ok })
	e.slack.Wait(0, func(v fakeslack.View) bool {
		if p, _ := v.Acked(env); !v.AckedInTime(env) || len(p) != 0 && string(p) != "null" {
			e.t.Errorf("slash command %s: acked in time %v, with %s; want in time and empty", env, v.AckedInTime(env), p)
		}
		return true
	})
	if len(got) != 1 || got[0].ResponseType != "ephemeral" || got[0].UnfurlLinks || got[0].UnfurlMedia {
		e.t.Errorf("answers to %s = %+v, want one, ephemeral, without previews", env, got)
	}
	return got[0].Text
}

// unanswered checks that the slash command sent as env got no answer (its effect was
// shown some other way) and was acked in time.
func (e *env) unanswered(env string) {
	e.t.Helper()
	e.wait("the ack of "+env, func(v fakeslack.View) bool { return v.AckedInTime(env) })
	if testutil.Hold(200*time.Millisecond, func() bool { return !e.slack.Wait(0, func(v fakeslack.View) bool { return len(v.Responses(env)) > 0 }) }) {
		return
	}
	e.t.Errorf("slash command %s was answered, want nothing", env)
}

// checkChatRules checks that every message the bot showed turned link and media
// previews off: a URL in a proposal must not be fetched before anyone approved it. And
// that no envelope missed Slack's 3 s ack deadline.
func (e *env) checkChatRules() {
	e.slack.Wait(0, func(v fakeslack.View) bool {
		for _, d := range v.Deliveries() {
			if d.TimedOut || !d.Acked.IsZero() && !d.InTime {
				e.t.Errorf("envelope %+v missed the ack deadline", d)
			}
		}
		for _, c := range v.Calls("") {
			switch c.Method {
			case "chat.postMessage", "chat.postEphemeral", "chat.update":
				if c.Form.Get("unfurl_links") != "false" || c.Form.Get("unfurl_media") != "false" {
					e.t.Errorf("%s without unfurl_links=false and unfurl_media=false: %v", c.Method, c.Form)
				}
			}
		}
		for _, m := range v.AllMessages() {
			if m.UnfurlLinks || m.UnfurlMedia {
				e.t.Errorf("a message with previews on: %+v", m)
			}
		}
		for _, r := range v.AllResponses() {
			if r.UnfurlLinks || r.UnfurlMedia {
				e.t.Errorf("a slash command answer with previews on: %+v", r)
			}
		}
		return true
	})
}

// noDecisionHeld checks, for a while, that proposal id waits undecided in thread.
func (e *env) noDecisionHeld(thread, id string) { e.NoDecisionHeld("slack", channel, thread, id) }
