package discord

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
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
	"github.com/agentd/agentd/internal/fakediscord"
	"github.com/agentd/agentd/internal/ollamatest"
	"github.com/agentd/agentd/internal/testutil"
)

// The end-to-end tests run the real relay, the real supervisor with the fake Ollama,
// and this bot on the real discordgo against the loopback fake. Not parallel:
// discordgo's endpoints are process-wide.

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
	t     testing.TB
	fake  *fakediscord.Server
	model *ollamatest.Fake
	dir   string
	logs  *testutil.SyncBuffer
	opt   bots.Options

	st     *store.Store
	sup    *agent.Supervisor
	relay  *bots.Relay
	bot    *Bot
	cancel context.CancelFunc
	done   sync.WaitGroup

	// runEnded, when set, is the supervisor's OnRunEnd (the schedules' manager).
	runEnded atomic.Pointer[func(run.End)]
	// teamsDir, when set, starts a team engine the relay runs /agent team with, finding
	// workflows there; onChat, when set, answers the model calls it takes (the roles').
	teamsDir string
	onChat   func(req *ollama.ChatRequest) (string, bool)
	eng      *team.Engine
	// wrap, when set, stands between the bot and the relay (to record what the bot hands on).
	wrap func(Relay) Relay
	// commands are added to the supervisor's commands (a test's own, say).
	commands []string

	mu      sync.Mutex
	replies []string
	names   int
}

func newEnv(t testing.TB, mod ...func(*bots.Options)) *env { return newEnvWith(t, &env{}, mod...) }

// newEnvWith is newEnv for an env whose teamsDir and onChat are set.
func newEnvWith(t testing.TB, e *env, mod ...func(*bots.Options)) *env {
	e.t, e.model, e.dir, e.logs = t, ollamatest.NewFake(t), t.TempDir(), &testutil.SyncBuffer{}
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
	e.model.OnChat(e.chat)
	e.opt = bots.Options{ApproveN: 3, RetryBackoff: func(int) time.Duration { return 50 * time.Millisecond }}
	for _, m := range mod {
		m(&e.opt)
	}
	e.start()
	t.Cleanup(e.stop)
	return e
}

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
		// A history summary (long runs, like the benchmark's): one line per numbered step.
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

func (e *env) script(replies ...string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.replies = append(e.replies, replies...)
}

func reply(name string, args any) string {
	b, _ := json.Marshal(map[string]any{
		"thoughts": map[string]string{"observations": "o", "text": "t", "reasoning": "because", "self_criticism": "s",
			"plan": "- do " + name + "\n- then finish", "speak": "I will " + name + " **now** @everyone"},
		"command": map[string]any{"name": name, "args": args},
	})
	return string(b)
}

func (e *env) start() {
	t := e.t
	st, err := store.Open(context.Background(), filepath.Join(e.dir, "agentd.db"))
	if err != nil {
		t.Fatal(err)
	}
	lc, err := llm.New(e.model.URL(), nil)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	var eng *team.Engine
	sopt := agent.OptionsOf(config.Default())
	sopt.Directives, sopt.AgentBudget = api.Directives{}, run.Budget{} // these tests were written without them
	sopt.Model, sopt.Commands = ollamatest.TinyModelName, append([]string{"write_file", "read_file", "ask_user", "finish", "bots_test_touch"}, e.commands...)
	sopt.Store, sopt.LLM, sopt.StateDir, sopt.Log = st, lc, e.dir, log
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
	bot, err := New(Options{Token: e.fake.Token(), Guilds: []string{eGuild}, Relay: to, Log: log,
		Watchdog: time.Second, Backoff: func(int) time.Duration { return 50 * time.Millisecond }})
	if err != nil {
		t.Fatal(err)
	}
	relay.Add(bot, bots.Rules{
		Teams:     []string{eGuild},
		Channels:  map[string]bots.Access{eChannel: {}},
		DM:        true,
		Approvers: bots.Access{Users: []string{uAlice.ID}, Groups: []string{eRole}},
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
	e.wait("the bot to connect and register /agent", func() bool {
		return bot.Status().State == bots.StateConnected && len(e.fake.Commands(eGuild)) == 1
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
	if e.cancel == nil {
		return
	}
	e.checkNoPreviews()
	e.checkAcksInTime()
	e.settle()
	e.cancel()
	e.done.Wait()
	if e.eng != nil {
		e.eng.Wait()
	}
	e.sup.Wait()
	e.st.Close()
	e.cancel = nil
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
			e.t.Fatalf("timed out waiting for %s\nlogs:\n%s", what, e.logs.String())
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

func hasText(ms []fakediscord.Message, s string) bool {
	for _, m := range ms {
		if strings.Contains(m.Content, s) {
			return true
		}
	}
	return false
}

func countText(ms []fakediscord.Message, s string) int {
	n := 0
	for _, m := range ms {
		if strings.Contains(m.Content, s) {
			n++
		}
	}
	return n
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
	for _, raw := range m.Components {
		var row struct {
			Components []struct {
				CustomID string `json:"custom_id"`
			} `json:"components"`
		}
		json.Unmarshal(raw, &row)
		for _, c := range row.Components {
			if id, err := ParseCustomID(c.CustomID); err == nil && id.Action == action {
				return c.CustomID
			}
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

func (e *env) agentOf(thread string) *api.Agent {
	e.t.Helper()
	var id string
	e.st.View(context.Background(), func(tx *store.Tx) error {
		b, err := tx.BindingByThread(Platform, eChannel, thread)
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

func (e *env) modelSaw(text string) {
	e.t.Helper()
	e.wait("the model to see "+text, func() bool {
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

func drain() {
	for {
		select {
		case <-touched:
		default:
			return
		}
	}
}

func (e *env) touchedInOrder(whats ...string) {
	e.t.Helper()
	for _, w := range whats {
		select {
		case got := <-touched:
			if got != w {
				e.t.Errorf("touched %q, want %q", got, w)
			}
		case <-time.After(10 * time.Second):
			e.t.Fatalf("command %s never started\nlogs:\n%s", w, e.logs.String())
		}
	}
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
