package slack

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	ollama "github.com/ollama/ollama/api"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/bots"
	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/daemon/agent"
	"github.com/agentd/agentd/daemon/config"
	"github.com/agentd/agentd/daemon/llm"
	"github.com/agentd/agentd/daemon/run"
	"github.com/agentd/agentd/daemon/server/chatstore"
	"github.com/agentd/agentd/daemon/store"
	"github.com/agentd/agentd/daemon/team"
	"github.com/agentd/agentd/internal/agenttest"
	"github.com/agentd/agentd/internal/fakeslack"
	"github.com/agentd/agentd/internal/ollamatest"
	"github.com/agentd/agentd/internal/testutil"
	"github.com/agentd/agentd/memory"
)

// touch is a test command; every start is sent on touched, so tests and the benchmark
// see the moment a command starts.
type touch struct{}

var touched = make(chan string, 1024)

func (touch) Spec() commands.Spec {
	return commands.Spec{Name: "bots_test_touch", Description: "touch something",
		Params: commands.Object(commands.Prop{Name: "what", Schema: commands.String("what", 40)}), Class: commands.ClassWriteWorkspace}
}

func (touch) Execute(ctx context.Context, env commands.Env, args json.RawMessage) (string, error) {
	var a struct{ What string }
	json.Unmarshal(args, &a)
	select {
	case touched <- a.What:
	default:
	}
	if a.What == "big" {
		return strings.Repeat("a long line of output\n", 400), nil
	}
	return "touched " + a.What, nil
}

func init() { commands.Register(touch{}) }

// Users in the tests.
const (
	approver  = "UAPPROVER"
	approver2 = "UAPPROVER2"
	member    = "UMEMBER" // in the SOPS user group
	stranger  = "USTRANGER"
	channel   = "C1"
)

type env struct {
	t      testing.TB
	slack  *fakeslack.Fake
	model  *ollamatest.Fake
	dir    string
	st     *store.Store
	sup    *agent.Supervisor
	relay  *bots.Relay
	bot    *Bot
	cancel context.CancelFunc
	done   sync.WaitGroup
	logs   *testutil.SyncBuffer
	opt    bots.Options
	// commands are added to the supervisor's commands (the sub-agent ones, say).
	commands []string
	// memory turns the supervisor's long-term memory on; ix is its index while running.
	memory bool
	ix     *memory.Index

	// runEnded, when set, is the supervisor's OnRunEnd (the schedules' manager).
	runEnded atomic.Pointer[func(run.End)]
	// teamsDir, when set, starts a team engine the relay runs /agent team with, finding
	// workflows there; onChat, when set, answers the model calls it takes (the roles').
	teamsDir string
	onChat   func(req *ollama.ChatRequest) (string, bool)
	eng      *team.Engine
	// wrap, when set, stands between the bot and the relay (to hold or record what the
	// bot hands on).
	wrap func(Relay) Relay

	mu      sync.Mutex
	replies []string
	names   int

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
	return newEnvWith(t, &env{memory: withMemory}, mod...)
}

// newEnvWith is newEnv for an env whose memory and commands fields are set.
func newEnvWith(t testing.TB, e *env, mod ...func(*bots.Options)) *env {
	e.slack, e.model, e.dir, e.logs = fakeslack.NewFake(t), ollamatest.NewFake(t), t.TempDir(), &testutil.SyncBuffer{}
	e.t = t
	e.slack.SetGroup("SOPS", member)
	e.model.OnChat(e.chat)
	e.opt = bots.Options{ApproveN: 3}
	for _, m := range mod {
		m(&e.opt)
	}
	e.start(t)
	t.Cleanup(func() {
		e.stop()
		e.checkChatRules() // in every test, whatever it posted
	})
	return e
}

// chat answers the agent's model calls: profiles on their own, steps from e.replies,
// and finish when the script is empty.
func (e *env) chat(req *ollama.ChatRequest) (string, error) {
	if e.onChat != nil {
		if s, ok := e.onChat(req); ok {
			return s, nil
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(req.Messages) > 0 && strings.HasPrefix(req.Messages[0].Content, "You create autonomous agents") {
		e.names++
		return fmt.Sprintf(`{"name":"helper-%d","description":"a helper","best_practices":["be brief"],"constraints":["stay local"]}`, e.names), nil
	}
	if len(req.Messages) > 1 && strings.HasPrefix(req.Messages[0].Content, "You keep the log of an autonomous agent short") {
		// A history summary (long runs, like the benchmark's): one line per numbered step,
		// so it does not eat a scripted step.
		var lines []string
		for _, l := range strings.Split(req.Messages[1].Content, "\n") {
			if n, _, ok := strings.Cut(l, ". "); ok && n != "" && strings.Trim(n, "0123456789") == "" {
				lines = append(lines, "did step "+n)
			}
		}
		out, _ := json.Marshal(map[string][]string{"lines": lines})
		return string(out), nil
	}
	if len(e.replies) == 0 {
		return reply("finish", map[string]string{"reason": "all done"}), nil
	}
	r := e.replies[0]
	e.replies = e.replies[1:]
	return r, nil
}

// script queues the model's next replies.
func (e *env) script(replies ...string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.replies = append(e.replies, replies...)
}

func reply(name string, args any) string {
	b, _ := json.Marshal(map[string]any{
		"thoughts": map[string]string{"observations": "o", "text": "t", "reasoning": "because", "self_criticism": "s",
			"plan": "- do " + name + "\n- then finish", "speak": "I will " + name + " <now> & then"},
		"command": map[string]any{"name": name, "args": args},
	})
	return string(b)
}

func (e *env) start(t testing.TB) {
	st, err := store.Open(context.Background(), filepath.Join(e.dir, "agentd.db"))
	if err != nil {
		t.Fatal(err)
	}
	lc, err := llm.New(e.model.URL(), nil)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	var mem agent.MemoryOptions
	if e.memory {
		if e.ix, err = memory.Open(filepath.Join(e.dir, "memory"), memory.Options{}); err != nil {
			t.Fatal(err)
		}
		mem = agent.MemoryOf(config.Default().Memory, e.ix)
	}
	var eng *team.Engine
	sopt := agent.OptionsOf(config.Default())
	sopt.Directives, sopt.AgentBudget = api.Directives{}, run.Budget{} // these tests were written without them
	sopt.Model, sopt.Commands = ollamatest.TinyModelName, append([]string{"write_file", "read_file", "ask_user", "finish", "bots_test_touch"}, e.commands...)
	sopt.Store, sopt.LLM, sopt.StateDir, sopt.Log = st, lc, e.dir, log
	sopt.Memory = mem
	sopt.Backoff = func(int) time.Duration { return 20 * time.Millisecond }
	sopt.OnRunEnd = func(end run.End) {
		if f := e.runEnded.Load(); f != nil {
			(*f)(end)
		}
		if eng != nil {
			eng.RunEnded(end)
		}
	}
	sup, err := agent.New(sopt)
	if err != nil {
		t.Fatal(err)
	}
	if e.teamsDir != "" {
		if eng, err = team.New(team.Options{Store: st, LLM: lc, Agents: agenttest.Of(sup), Log: log, Settings: sup.ModelSettings,
			Backoff: func(int) time.Duration { return 20 * time.Millisecond }}); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := sup.Start(ctx); err != nil {
		t.Fatal(err)
	}
	opt := e.opt
	opt.Service, opt.Bindings, opt.Log = agenttest.Of(sup), chatstore.New(st), log
	if opt.Audit == nil {
		opt.Audit = chatstore.New(st).Audit // as the daemon wires it
	}
	relay := bots.New(opt)
	if eng != nil {
		relay.SetTeams(team.Shelf{Engine: eng, Dir: e.teamsDir})
	}
	var to Relay = relay
	if e.wrap != nil {
		to = e.wrap(relay)
	}
	bot, err := New(Options{BotToken: e.slack.BotToken, AppToken: e.slack.AppToken, APIURL: e.slack.APIURL(), Relay: to, Log: log,
		PingInterval: 2 * time.Second, Backoff: func(int) time.Duration { return 50 * time.Millisecond },
		OnConnection: func(up bool) { e.connMu.Lock(); e.conns = append(e.conns, up); e.connMu.Unlock() }})
	if err != nil {
		t.Fatal(err)
	}
	relay.Add(bot, bots.Rules{
		Teams:     []string{e.slack.Team},
		Channels:  map[string]bots.Access{channel: {}},
		DM:        true,
		Approvers: bots.Access{Users: []string{approver, approver2}, Groups: []string{"SOPS"}},
	})
	e.st, e.sup, e.relay, e.bot, e.cancel, e.eng = st, sup, relay, bot, cancel, eng
	e.done.Add(2)
	go func() { defer e.done.Done(); relay.Run(ctx) }()
	go func() { defer e.done.Done(); bot.Run(ctx) }()
	<-relay.Ready()
	if eng != nil {
		if err := eng.Start(ctx); err != nil { // after the supervisor, as the daemon does
			t.Fatal(err)
		}
	}
	if !e.slack.Wait(5*time.Second, func(v fakeslack.View) bool { return v.Connected() }) {
		t.Fatal("the bot never connected to the fake")
	}
}

func (e *env) stop() {
	if e.cancel == nil {
		return
	}
	e.cancel()
	e.done.Wait()
	if e.eng != nil {
		e.eng.Wait()
	}
	e.sup.Wait()
	e.st.Close()
	if e.ix != nil {
		e.ix.Close()
	}
	e.cancel = nil
}

func (e *env) restart() {
	e.stop()
	e.start(e.t)
}

func (e *env) wait(what string, cond func(v fakeslack.View) bool) {
	e.t.Helper()
	if !e.slack.Wait(10*time.Second, cond) {
		e.t.Fatalf("timed out waiting for %s\nlogs:\n%s", what, e.logs.String())
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

func (e *env) agentOf(thread string) *api.Agent {
	e.t.Helper()
	var id string
	e.st.View(context.Background(), func(tx *store.Tx) error {
		b, err := tx.BindingByThread("slack", channel, thread)
		if err == nil {
			id = b.AgentID
		}
		return err
	})
	a, err := e.sup.API().Views.Agent(context.Background(), id)
	if err != nil {
		e.t.Fatalf("agent of thread %s: %v", thread, err)
	}
	return a
}

func (e *env) decisions(proposalID string) int {
	var n int
	e.st.View(context.Background(), func(tx *store.Tx) error {
		var err error
		n, err = tx.CountDecisions(proposalID)
		return err
	})
	return n
}

// modelSaw waits until a model request carries text.
func (e *env) modelSaw(text string) {
	e.t.Helper()
	e.wait("the model to see "+text, func(fakeslack.View) bool {
		for _, r := range e.model.Requests() {
			for _, m := range r.Messages {
				if strings.Contains(m.Content, text) {
					return true
				}
			}
		}
		return false
	})
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
