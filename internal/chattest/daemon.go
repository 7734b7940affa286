package chattest

import (
	"context"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	ollama "github.com/ollama/ollama/api"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/bots"
	"github.com/agentd/agentd/daemon/agent"
	"github.com/agentd/agentd/daemon/config"
	"github.com/agentd/agentd/daemon/run"
	"github.com/agentd/agentd/daemon/schedule"
	"github.com/agentd/agentd/daemon/server/chatstore"
	"github.com/agentd/agentd/daemon/store"
	"github.com/agentd/agentd/daemon/team"
	"github.com/agentd/agentd/internal/agenttest"
	"github.com/agentd/agentd/internal/ollamatest"
	"github.com/agentd/agentd/internal/testutil"
	"github.com/agentd/agentd/memory"
)

// Daemon is the daemon side of a chat harness: the real store, supervisor (on the fake
// Ollama, answering from a script), relay and, when TeamsDir is set, team engine. Set
// the configuration fields, call Init, then Start with the platform's bot.
type Daemon struct {
	// Configuration, read by Start.
	Opt bots.Options
	// Commands are added to the supervisor's commands (the sub-agent ones, say).
	Commands []string
	// Memory turns the supervisor's long-term memory on; Ix is its index while running.
	Memory bool
	// TeamsDir, when set, starts a team engine the relay runs /agent team with, finding
	// workflows there; OnChat, when set, answers the model calls it takes (the roles').
	TeamsDir string
	OnChat   func(req *ollama.ChatRequest) (string, bool)
	// Wrap, when set, stands between the bot and the relay (to hold or record what the
	// bot hands on).
	Wrap func(bots.Handler) bots.Handler
	// RunEnded, when set, is the supervisor's OnRunEnd (the schedules' manager).
	RunEnded atomic.Pointer[func(run.End)]

	T     testing.TB
	Model *ollamatest.Fake
	Dir   string
	Logs  *testutil.SyncBuffer

	// While running.
	St    *store.Store
	Sup   *agent.Supervisor
	Relay *bots.Relay
	Eng   *team.Engine
	Ix    *memory.Index

	cancel context.CancelFunc
	done   sync.WaitGroup

	agent ollamatest.Agent // profiles, summaries, then the script and finish
}

// Init makes the fake model (answering from the script), the state dir and the log.
func (d *Daemon) Init(t testing.TB) {
	d.T, d.Model, d.Dir, d.Logs = t, ollamatest.NewFake(t), t.TempDir(), &testutil.SyncBuffer{}
	d.Model.OnChat(d.chat)
}

// chat answers the agent's model calls: the roles' from OnChat, the rest from the
// scripted agent model.
func (d *Daemon) chat(req *ollama.ChatRequest) (string, error) {
	if d.OnChat != nil {
		if s, ok := d.OnChat(req); ok {
			return s, nil
		}
	}
	return d.agent.Chat(req)
}

// Script queues the model's next replies.
func (d *Daemon) Script(replies ...string) { d.agent.Script(replies...) }

// Reply is a model reply proposing command name with args, its speak line speak.
func Reply(name string, args any, speak string) string {
	return ollamatest.ReplyThinking(name, args, api.Thoughts{Observations: "o", Text: "t", Reasoning: "because",
		SelfCriticism: "s", Plan: "- do " + name + "\n- then finish", Speak: speak})
}

// Touch is a reply proposing the test command bots_test_touch of what.
func Touch(what, speak string) string {
	return Reply(TouchCommand, map[string]string{"what": what}, speak)
}

// Attach makes the platform's bot handing chat actions to to (the relay, or what Wrap
// put before it), adds it to relay with its rules, and returns what runs it until ctx
// ends.
type Attach func(relay *bots.Relay, to bots.Handler, log *slog.Logger) (run func(ctx context.Context))

// Start opens the store, starts the supervisor, the relay, the bot attach makes and the
// team engine, as the daemon does; it returns once the relay is ready.
func (d *Daemon) Start(attach Attach) {
	t := d.T
	st, err := store.Open(context.Background(), filepath.Join(d.Dir, "agentd.db"))
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(d.Logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	sopt := agenttest.Options(t, st, d.Dir, d.Model.URL(), ollamatest.TinyModelName,
		append([]string{"write_file", "read_file", "ask_user", "finish", TouchCommand}, d.Commands...)...)
	sopt.Log = log
	if d.Memory {
		if d.Ix, err = memory.Open(filepath.Join(d.Dir, "memory"), memory.Options{}); err != nil {
			t.Fatal(err)
		}
		sopt.Memory = agent.MemoryOf(config.Default().Memory, d.Ix)
	}
	var eng *team.Engine
	sopt.OnRunEnd = func(end run.End) {
		if f := d.RunEnded.Load(); f != nil {
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
	if d.TeamsDir != "" {
		if eng, err = team.New(team.Options{Store: st, LLM: sopt.LLM, Agents: agenttest.Of(sup), Log: log, Settings: sup.ModelSettings,
			Backoff: func(int) time.Duration { return 20 * time.Millisecond }}); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := sup.Start(ctx); err != nil {
		t.Fatal(err)
	}
	opt := d.Opt
	opt.Service, opt.Bindings, opt.Log = agenttest.Of(sup), chatstore.New(st), log
	if opt.Audit == nil {
		opt.Audit = chatstore.New(st).Audit // as the daemon wires it
	}
	relay := bots.New(opt)
	if eng != nil {
		relay.SetTeams(team.Shelf{Engine: eng, Dir: d.TeamsDir})
	}
	var to bots.Handler = relay
	if d.Wrap != nil {
		to = d.Wrap(relay)
	}
	runBot := attach(relay, to, log)
	d.St, d.Sup, d.Relay, d.Eng, d.cancel = st, sup, relay, eng, cancel
	d.done.Add(2)
	go func() { defer d.done.Done(); relay.Run(ctx) }()
	go func() { defer d.done.Done(); runBot(ctx) }()
	<-relay.Ready()
	if eng != nil {
		if err := eng.Start(ctx); err != nil { // after the supervisor, as the daemon does
			t.Fatal(err)
		}
	}
}

// Running reports whether the daemon was started and not stopped since.
func (d *Daemon) Running() bool { return d.cancel != nil }

// Stop stops everything Start started and closes the store.
func (d *Daemon) Stop() {
	if d.cancel == nil {
		return
	}
	d.cancel()
	d.done.Wait()
	if d.Eng != nil {
		d.Eng.Wait()
	}
	d.Sup.Wait()
	d.St.Close()
	if d.Ix != nil {
		d.Ix.Close()
	}
	d.cancel = nil
}

// Scheduler runs the schedules' manager over the supervisor, delivering through the
// relay and keeping keep agents of each schedule, until the test ends.
func (d *Daemon) Scheduler(keep int) *schedule.Manager {
	d.T.Helper()
	m := schedule.New(schedule.Options{Store: d.St, Agents: agenttest.Of(d.Sup), Chat: d.Relay, Local: time.UTC, KeepAgents: keep})
	f := m.RunEnded
	d.RunEnded.Store(&f)
	ctx, cancel := context.WithCancel(context.Background())
	if err := m.Start(ctx); err != nil {
		d.T.Fatal(err)
	}
	d.T.Cleanup(func() { m.Stop(); cancel() })
	return m
}
