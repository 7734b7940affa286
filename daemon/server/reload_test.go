package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	ollama "github.com/ollama/ollama/api"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/daemon/agent"
	"github.com/agentd/agentd/daemon/config"
	"github.com/agentd/agentd/internal/ollamatest"
	"github.com/agentd/agentd/internal/testutil"
)

func TestLiveAndRestartKeys(t *testing.T) {
	for key, want := range map[string]string{
		"ollama.model": "live", "ollama.keep_alive": "live", "agent.commands": "live", "agent.command_timeout": "live",
		"permissions.allow": "live", "agents.bob.deny": "live", "agents.bob": "live", "schedules.grace": "live", "log.level": "live",
		"slack.approvers": "bots", "bots.approve_count": "bots", "discord.guilds": "bots",
		"ollama.hosts": "restart", "ollama.request_timeout": "restart", "memory.k": "restart", "web_commands.enabled": "restart",
		"mcp.servers": "restart", "shell.sandbox": "restart", "state_dir": "restart", "socket": "restart",
		"log.format": "restart", "agent.workspace_root": "restart", "http.listen": "restart", "permissionsx.allow": "restart",
	} {
		got := "restart"
		switch {
		case matches(key, liveKeys):
			got = "live"
		case matches(key, botKeys):
			got = "bots"
		}
		if got != want {
			t.Errorf("%s: %s, want %s", key, got, want)
		}
	}
}

// reloadDaemon is a daemon started with Run over a config file the test rewrites.
type reloadDaemon struct {
	t      *testing.T
	file   string
	model  *ollamatest.Fake
	c      *api.Client
	hup    chan os.Signal
	log    *testutil.SyncBuffer
	stop   func() error
	header string // [ollama] host and the like, kept in every version of the file
	notes  func() []string
}

func startReloadDaemon(t *testing.T, body string) *reloadDaemon {
	d := &reloadDaemon{t: t, file: filepath.Join(t.TempDir(), "agentd.toml"), model: ollamatest.NewFake(t),
		hup: make(chan os.Signal, 1), log: &testutil.SyncBuffer{}}
	d.model.SetModels("m1", "m2")
	var n atomic.Int64
	// Every step writes a file not written before: no repeats and progress at each step,
	// so continuous mode never asks and the watchdog sees no loop.
	d.model.OnChat(func(*ollama.ChatRequest) (string, error) {
		return proposal("write_file", fmt.Sprintf(`{"path":"d%d","contents":"x"}`, n.Add(1))), nil
	})
	d.model.SetDelay(3 * time.Millisecond) // steps in flight while the config changes
	stateDir := t.TempDir()
	sock := filepath.Join(testutil.ShortTempDir(t), "s.sock")
	d.header = fmt.Sprintf("[ollama]\nhost = %q\n", d.model.URL())
	d.write(body)
	load := func() (*config.Config, error) {
		cfg, _, err := config.Load(d.file, nil)
		if err != nil {
			return nil, err
		}
		cfg.StateDir, cfg.Socket = stateDir, sock // the flags, applied again on every reload
		return cfg, nil
	}
	cfg, err := load()
	if err != nil {
		t.Fatal(err)
	}
	level := new(slog.LevelVar)
	level.Set(cfg.Log.SlogLevel())
	log := cfg.Log.Logger(d.log, level)
	var notesMu sync.Mutex
	var notes []string
	d.stop = sync.OnceValue(runDaemonWith(t, cfg, log, Options{Load: load, ConfigPath: d.file, Reloads: d.hup, LogLevel: level,
		Notify: func(s string) { notesMu.Lock(); notes = append(notes, s); notesMu.Unlock() }}))
	t.Cleanup(func() { d.stop() })
	d.c = &api.Client{Socket: sock}
	d.notes = func() []string { notesMu.Lock(); defer notesMu.Unlock(); return slices.Clone(notes) }
	return d
}

// proposal is a model reply proposing command with the JSON object args.
func proposal(command, args string) string { return ollamatest.Reply(command, json.RawMessage(args)) }

func (d *reloadDaemon) write(body string) {
	d.t.Helper()
	if err := os.WriteFile(d.file, []byte(d.header+body), 0o600); err != nil {
		d.t.Fatal(err)
	}
}

// proposals returns the agent's proposals by step, failing the test when a step is
// missing or there twice.
func (d *reloadDaemon) proposals(id string) []api.Proposal {
	d.t.Helper()
	ps, err := api.ProposalsRoute.Do(context.Background(), d.c, id, api.None{})
	if err != nil {
		d.t.Fatal(err)
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i].Step < ps[j].Step })
	for i, p := range ps {
		if p.Step != i+1 {
			d.t.Fatalf("agent %s: proposal %d is step %d: a step was dropped or duplicated", id, i+1, p.Step)
		}
	}
	return ps
}

func (d *reloadDaemon) waitSteps(id string, n int) []api.Proposal {
	d.t.Helper()
	var ps []api.Proposal
	if !testutil.Wait(20*time.Second, func() bool { ps = d.proposals(id); return len(ps) >= n }) {
		d.t.Fatalf("agent %s did not reach %d steps", id, n)
	}
	return ps
}

// TestReloadUnderLoad reloads a daemon whose agents step without pause, changing the
// model and the permission patterns each time, by API and by SIGHUP: no agent is lost, no
// step is dropped or taken twice, and the steps begun after each reload use the new model
// and patterns.
func TestReloadUnderLoad(t *testing.T) {
	d := startReloadDaemon(t, "model = \"m1\"\n")
	ctx := context.Background()
	var ids []string
	for i := range 4 {
		a, err := api.CreateAgentRoute.Do(ctx, d.c, "", api.CreateAgentRequest{Name: fmt.Sprintf("busy-%d", i), Description: "d", Task: "list folders",
			Policy: &api.Policy{Mode: "continuous", ContinuousLimit: 1 << 30}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, a.ID)
	}
	rounds := []struct {
		model, deny string
		bySignal    bool
	}{
		{"m2", `"write_file(*)"`, false},
		{"m1", "", true},
		{"m2", "", false},
		{"m1", `"write_file(d*)"`, true},
		{"m2", "", false},
	}
	for i, r := range rounds {
		for _, id := range ids {
			d.waitSteps(id, len(d.proposals(id))+2) // busy on the old config
		}
		// A deny round refuses every step: no progress for as long as it lasts, which is not
		// what this test is about, so the watchdog's idle limit is its largest.
		d.write(fmt.Sprintf("model = %q\n[permissions]\ndeny = [%s]\n[agent]\nwatchdog_idle_steps = 200\n", r.model, r.deny))
		if r.bySignal {
			d.hup <- syscall.SIGHUP
			if !testutil.Wait(10*time.Second, func() bool {
				st, err := api.StatusRoute.Do(ctx, d.c, "", api.None{})
				return err == nil && st.Ollama.Model == r.model
			}) {
				t.Fatalf("round %d: SIGHUP did not switch the model to %s", i, r.model)
			}
		} else {
			res, err := api.ReloadRoute.Do(ctx, d.c, "", api.None{})
			if err != nil {
				t.Fatalf("round %d: %v", i, err)
			}
			if !slices.Contains(res.Applied, "ollama.model") || len(res.NeedsRestart) != 0 {
				t.Errorf("round %d: reload result %+v, want ollama.model applied and nothing needing a restart", i, res)
			}
		}
		before := map[string]int{}
		for _, id := range ids {
			before[id] = len(d.proposals(id))
		}
		for _, id := range ids {
			// A step begun before the reload may end after it; the three after it are new.
			ps := d.waitSteps(id, before[id]+4)
			for _, p := range ps[before[id]+1 : before[id]+4] {
				if p.Model != r.model {
					t.Errorf("round %d, agent %s, step %d: model %q, want %q", i, id, p.Step, p.Model, r.model)
				}
				if refused := p.Status == api.ProposalFeedback; refused != (r.deny != "") {
					t.Errorf("round %d, agent %s, step %d: status %s, deny patterns [%s]", i, id, p.Step, p.Status, r.deny)
				}
			}
		}
	}
	for _, id := range ids {
		a, err := api.AgentRoute.Do(ctx, d.c, id, api.None{})
		if err != nil {
			t.Fatalf("agent %s lost: %v", id, err)
		}
		switch a.State {
		case api.StateThinking, api.StateExecuting:
		default:
			t.Errorf("agent %s is %s (%s), want it still stepping", a.Name, a.State, a.StateReason)
		}
	}
	if err := d.stop(); err != nil {
		t.Fatal(err)
	}
	if strings.Count(d.log.String(), "config reloaded") != len(rounds) {
		t.Errorf("want %d reloads logged:\n%s", len(rounds), d.log)
	}
}

// TestReloadRefusesABadFile keeps the old config when the new file is bad, logs every
// problem with its line, and reports the keys only a restart applies.
func TestReloadRefusesABadFile(t *testing.T) {
	d := startReloadDaemon(t, "model = \"m1\"\n")
	ctx := context.Background()
	d.write("model = \"m2\"\nmax_context = 10\n[agent]\ncommands = [\"finish\", \"ask_user\", \"no_such\"]\ndisabled_components = [\"nope\"]\n[permissions]\nallow = [\"read_file(\"]\n")
	_, err := api.ReloadRoute.Do(ctx, d.c, "", api.None{})
	if !errors.Is(err, api.ErrConflict) {
		t.Fatalf("Reload of a bad file: %v, want a conflict", err)
	}
	for _, want := range []string{"ollama.max_context", "read_file(", "keeps running on the config it had"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal does not mention %q:\n%v", want, err)
		}
	}
	for _, want := range []string{"line 4: ollama.max_context", "config reload refused"} {
		if !strings.Contains(d.log.String(), want) {
			t.Errorf("the log does not show %q:\n%s", want, d.log)
		}
	}
	st, err := api.StatusRoute.Do(ctx, d.c, "", api.None{})
	if err != nil || st.Ollama.Model != "m1" {
		t.Fatalf("after a refused reload: model %q (err %v), want m1", st.Ollama.Model, err)
	}

	// Unknown commands and components are refused too (checked after the file loads).
	d.write("model = \"m1\"\n[agent]\ndisabled_components = [\"nope\"]\n")
	if _, err := api.ReloadRoute.Do(ctx, d.c, "", api.None{}); !errors.Is(err, api.ErrConflict) || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("Reload with an unknown component: %v", err)
	}

	d.write("model = \"m1\"\n[memory]\nk = 3\n[log]\nlevel = \"debug\"\n")
	res, err := api.ReloadRoute.Do(ctx, d.c, "", api.None{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Applied, []string{"log.level"}) || !slices.Equal(res.NeedsRestart, []string{"memory.k"}) {
		t.Errorf("reload result %+v, want log.level applied and memory.k needing a restart", res)
	}
	if !strings.Contains(d.log.String(), "config changes need a restart") {
		t.Errorf("the restart-only change is not logged:\n%s", d.log)
	}
	// Still reported on the next reload: the daemon still runs with the old value.
	res, err = api.ReloadRoute.Do(ctx, d.c, "", api.None{})
	if err != nil || len(res.Applied) != 0 || !slices.Equal(res.NeedsRestart, []string{"memory.k"}) {
		t.Errorf("second reload: %+v, %v; want nothing applied and memory.k still needing a restart", res, err)
	}
	// systemd saw each reload begin and end, refused ones included.
	want := slices.Repeat([]string{"RELOADING=1", "READY=1"}, 4)
	if got := d.notes(); !slices.Equal(got, want) {
		t.Errorf("sd_notify states %q, want %q", got, want)
	}
}

// A reload of a file with settings that do nothing applies it and says so, as
// agentd --check-config does.
func TestReloadReturnsWarnings(t *testing.T) {
	d := startReloadDaemon(t, "model = \"m1\"\n")
	d.write("model = \"m1\"\n[http]\nagent_protocol = true\n")
	res, err := api.ReloadRoute.Do(context.Background(), d.c, "", api.None{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "http.agent_protocol") {
		t.Errorf("reload warnings = %q, want one about http.agent_protocol", res.Warnings)
	}
	if !strings.Contains(d.log.String(), "config warning") {
		t.Errorf("the warning is not logged:\n%s", d.log)
	}
}

// TestWatchdogSettingsReachTheSupervisor: [agent]'s watchdog thresholds, and an
// [agents.NAME] table's, reach the supervisor at start and on reload alike.
func TestWatchdogSettingsReachTheSupervisor(t *testing.T) {
	cfg := config.Default()
	cfg.Agent.WatchdogFailures, cfg.Agent.WatchdogIdleSteps = 4, 12
	idle := 20
	cfg.Agents = map[string]config.AgentOverride{"poller": {WatchdogIdleSteps: &idle}}
	s := agent.SettingsOf(cfg)
	if s.WatchdogFailures != 4 || s.WatchdogIdleSteps != 12 {
		t.Errorf("reloaded thresholds = %d failures, %d idle steps, want 4 and 12", s.WatchdogFailures, s.WatchdogIdleSteps)
	}
	if w := s.Agents["poller"]; w.WatchdogFailures != nil || w.WatchdogIdleSteps == nil || *w.WatchdogIdleSteps != 20 {
		t.Errorf("poller's thresholds = %v / %v, want [agent]'s failures (unset) and 20 idle steps", w.WatchdogFailures, w.WatchdogIdleSteps)
	}
	d := &daemon{cfg: cfg}
	if o := d.agentOptions(); o.WatchdogFailures != s.WatchdogFailures || o.WatchdogIdleSteps != s.WatchdogIdleSteps ||
		!reflect.DeepEqual(o.Agents["poller"], s.Agents["poller"]) {
		t.Errorf("start options %+v / %+v differ from the reloaded settings", o.AgentConfig, o.Agents["poller"])
	}
}

// TestStartOptionsCarryTheReloadedSettings: every reloadable setting the supervisor starts
// with is the one a reload of the same file gives it, [agents.NAME] budgets included.
func TestStartOptionsCarryTheReloadedSettings(t *testing.T) {
	cfg := config.Default()
	cfg.Ollama.Model, cfg.Ollama.MaxContext = "m1", 4096
	cfg.Agent.MaxSteps, cfg.Agent.HistoryEpisodes = 30, 6
	steps, idle := 5, 20
	cfg.Agents = map[string]config.AgentOverride{"poller": {MaxSteps: &steps, WatchdogIdleSteps: &idle, Allow: []string{"read_file(*)"}}}
	s := agent.SettingsOf(cfg)
	o := (&daemon{cfg: cfg}).agentOptions()
	ov, sv := reflect.ValueOf(o), reflect.ValueOf(s)
	for i := range sv.NumField() {
		name := sv.Type().Field(i).Name
		f := ov.FieldByName(name)
		if !f.IsValid() {
			t.Errorf("agent.Options has no field %s of agent.Settings", name)
			continue
		}
		if !reflect.DeepEqual(f.Interface(), sv.Field(i).Interface()) {
			t.Errorf("%s at start = %+v, on reload = %+v", name, f.Interface(), sv.Field(i).Interface())
		}
	}
	if b := s.Agents["poller"].MaxSteps; b == nil || *b != 5 {
		t.Errorf("poller's budget on reload = %v steps, want 5", b)
	}
}

// recordingChat is a relay that answers every call, and records the last one.
type recordingChat struct{ last string }

func (c *recordingChat) CheckChannel(platform, channel string) error {
	c.last = "check " + platform + ":" + channel
	return nil
}
func (c *recordingChat) StartRunThread(_ context.Context, platform, channel, header, _ string) (string, error) {
	c.last = "thread " + platform + ":" + channel + " " + header
	return "T1", nil
}
func (c *recordingChat) BindRun(_ context.Context, platform, _, thread, agentID, _, _ string) error {
	c.last = "bind " + platform + " " + thread + " " + agentID
	return nil
}
func (c *recordingChat) Note(_ context.Context, platform, _, thread, text string) error {
	c.last = "note " + platform + " " + thread + " " + text
	return nil
}
func (c *recordingChat) RunThread(_ context.Context, platform, runID string) (string, string, bool) {
	c.last = "run " + platform + " " + runID
	return "C1", "T1", true
}

// Without bots the schedules' chat refuses every call, naming the platform's section;
// with a relay set it passes each call on, and refuses again once the relay is gone.
func TestChatSwitchRefusesWithoutARelay(t *testing.T) {
	ctx := context.Background()
	var sw chatSwitch
	refused := func(when string) {
		t.Helper()
		for name, err := range map[string]error{
			"CheckChannel":   sw.CheckChannel("discord", "C1"),
			"StartRunThread": func() error { _, err := sw.StartRunThread(ctx, "discord", "C1", "h", "d"); return err }(),
			"BindRun":        sw.BindRun(ctx, "discord", "C1", "T1", "a-1", "r-1", "me"),
			"Note":           sw.Note(ctx, "discord", "C1", "T1", "hi"),
		} {
			if err == nil || !strings.Contains(err.Error(), "no chat bot is enabled") || !strings.Contains(err.Error(), "[discord]") {
				t.Errorf("%s: %s = %v, want the no-bot error naming [discord]", when, name, err)
			}
		}
		if ch, th, ok := sw.RunThread(ctx, "discord", "r-1"); ok || ch != "" || th != "" {
			t.Errorf("%s: RunThread = %q, %q, %v; want none", when, ch, th, ok)
		}
	}
	refused("before a relay")
	rc := &recordingChat{}
	sw.set(rc)
	if err := sw.CheckChannel("slack", "C9"); err != nil || rc.last != "check slack:C9" {
		t.Errorf("CheckChannel = %v, relay saw %q", err, rc.last)
	}
	if th, err := sw.StartRunThread(ctx, "slack", "C9", "head", "d"); err != nil || th != "T1" || rc.last != "thread slack:C9 head" {
		t.Errorf("StartRunThread = %q, %v, relay saw %q", th, err, rc.last)
	}
	if err := sw.BindRun(ctx, "slack", "C9", "T1", "a-1", "r-1", "me"); err != nil || rc.last != "bind slack T1 a-1" {
		t.Errorf("BindRun = %v, relay saw %q", err, rc.last)
	}
	if err := sw.Note(ctx, "slack", "C9", "T1", "hi"); err != nil || rc.last != "note slack T1 hi" {
		t.Errorf("Note = %v, relay saw %q", err, rc.last)
	}
	if ch, th, ok := sw.RunThread(ctx, "slack", "r-1"); !ok || ch != "C1" || th != "T1" || rc.last != "run slack r-1" {
		t.Errorf("RunThread = %q, %q, %v, relay saw %q", ch, th, ok, rc.last)
	}
	sw.set(nil)
	refused("after the relay is gone")
}
