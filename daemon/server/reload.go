package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/daemon/agent"
	"github.com/agentd/agentd/daemon/config"
	"github.com/agentd/agentd/daemon/schedule"
)

// liveKeys are the config keys a reload applies while agents run; a key ending in "."
// covers its whole section. Every other key that changed is reported as needing a
// restart, so a section added later is never silently ignored.
var liveKeys = []string{
	"ollama.model", "ollama.smart_model", "ollama.keep_alive", "ollama.max_context",
	"agent.constraints", "agent.resources", "agent.best_practices", "agent.commands",
	"agent.disabled_components", "agent.max_invalid_replies",
	"agent.continuous_limit", "agent.command_timeout", "agent.output_cap", "agent.history_episodes",
	"agent.watchdog_failures", "agent.watchdog_idle_steps",
	"permissions.", "agents.", "schedules.", "log.level",
}

// botKeys are the sections of the chat bots: a change there restarts them ([teams] dir
// is where chat's /agent team finds workflows).
var botKeys = []string{"bots.", "slack.", "discord.", "teams."}

func matches(key string, patterns []string) bool {
	return slices.ContainsFunc(patterns, func(p string) bool {
		return key == p || strings.HasSuffix(p, ".") && strings.HasPrefix(key, p)
	})
}

// reloader applies a re-read config to the running daemon (SIGHUP, POST /v0/reload).
type reloader struct {
	mu      sync.Mutex // one reload at a time
	load    func() (*config.Config, error)
	path    string
	started *config.Config // what the daemon started with: the restart-only keys still in use
	cur     *config.Config // what the last good reload applied
	live    *liveConfig
	sup     *agent.Supervisor
	mgr     *schedule.Manager
	bots    *liveBots
	level   *slog.LevelVar
	notify  func(state string)
	log     *slog.Logger
}

// Reload re-reads the config and applies it; a bad config is logged problem by problem
// and refused, and the daemon goes on with the old one.
func (rl *reloader) Reload(ctx context.Context) (*api.ReloadResult, error) {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	if rl.load == nil {
		return nil, api.Errorf(api.ErrConflict, "this agentd cannot reload its config (it was started without a way to read it)")
	}
	// systemd shows the unit as reloading until READY=1 (Type=notify with ExecReload).
	rl.notify("RELOADING=1")
	defer rl.notify("READY=1")
	rl.log.Info("reloading the config", "config", rl.where())
	res, err := rl.apply(ctx)
	if err != nil {
		var ce *config.Error
		if errors.As(err, &ce) {
			for _, p := range ce.Problems {
				rl.log.Error("config problem", "config", rl.where(), "problem", p.String())
			}
		} else {
			rl.log.Error("config problem", "config", rl.where(), "err", err)
		}
		rl.log.Warn("config reload refused: agentd keeps running on the config it had", "config", rl.where())
		return nil, api.Errorf(api.ErrConflict, "%v\nagentd keeps running on the config it had", err)
	}
	if len(res.Applied) > 0 {
		rl.log.Info("config reloaded", "applied", strings.Join(res.Applied, ","), "bots_restarted", res.BotsRestarted)
	} else {
		rl.log.Info("config reloaded: nothing to apply")
	}
	if len(res.NeedsRestart) > 0 {
		rl.log.Warn("config changes need a restart to apply", "keys", strings.Join(res.NeedsRestart, ","))
	}
	for _, w := range res.Warnings {
		rl.log.Warn("config warning", "config", rl.where(), "warning", w)
	}
	return res, nil
}

func (rl *reloader) where() string { return cmp.Or(rl.path, "(defaults)") }

// apply reads, checks and applies the config. Everything that can fail is done before
// anything is changed, so a refused reload changes nothing.
func (rl *reloader) apply(ctx context.Context) (*api.ReloadResult, error) {
	cfg, err := rl.load()
	if err != nil {
		return nil, err
	}
	if err := checkConfig(cfg); err != nil {
		return nil, err
	}
	res := &api.ReloadResult{Config: rl.path, Applied: []string{}, NeedsRestart: []string{}}
	for _, w := range cfg.Warnings() {
		res.Warnings = append(res.Warnings, w.String())
	}
	changed := config.Changes(rl.cur, cfg)
	for _, k := range changed {
		if matches(k, liveKeys) || matches(k, botKeys) {
			res.Applied = append(res.Applied, k)
		}
	}
	for _, k := range config.Changes(rl.started, cfg) {
		if !matches(k, liveKeys) && !matches(k, botKeys) {
			res.NeedsRestart = append(res.NeedsRestart, k)
		}
	}
	var newBots *chatBots
	restartBots := slices.ContainsFunc(changed, func(k string) bool { return matches(k, botKeys) })
	if !restartBots {
		// A token file rotated in place changes no key: compare what the bots run with.
		// A token that can no longer be read, or can now, restarts them too.
		if readBotTokens(cfg).fp != rl.bots.tokens() {
			restartBots = true
			res.Applied = append(res.Applied, "bot tokens")
		}
	}
	if restartBots {
		if newBots, err = rl.bots.svc(cfg); err != nil {
			return nil, err
		}
		// A bot that runs is never stopped for a token that can no longer be read: the
		// reload is refused, naming the secret, and the bot keeps the token it has.
		if err := newBots.wouldStop(rl.bots.running()); err != nil {
			return nil, err
		}
	}
	// Restart-only settings keep their running values: a reload must not half-apply them
	// (the web component's model, say, reads the live config).
	if err := rl.sup.Reload(agent.SettingsOf(cfg)); err != nil {
		return nil, err
	}
	rl.mgr.SetSettings(cfg.Schedules.Grace.Duration, cfg.Schedules.KeepAgents)
	if rl.level != nil {
		rl.level.Set(cfg.Log.SlogLevel())
	}
	if newBots != nil {
		rl.bots.replace(ctx, newBots)
		res.BotsRestarted = true
	}
	rl.cur = cfg
	rl.live.store(cfg)
	return res, nil
}

// liveConfig is the config in use, for the few parts built at start that read a
// reloadable setting on every call (read_webpage asks the current model).
type liveConfig struct{ p atomic.Pointer[config.Config] }

func (l *liveConfig) store(c *config.Config) { l.p.Store(c) }
func (l *liveConfig) load() *config.Config   { return l.p.Load() }

// liveBots runs the current set of chat bots and swaps it for a new one on reload: the
// old set is stopped (its connections closed) before the new one starts, so no platform
// event is handled twice. The schedules reach the current relay through chatSwitch.
//
// It is made before the supervisor, whose doctor check reads its statuses; svc and mgr,
// which need the supervisor, are set once after it, before start.
type liveBots struct {
	svc func(cfg *config.Config) (*chatBots, error) // a bot set for cfg, not started

	mgr   *schedule.Manager
	sw    *chatSwitch
	log   *slog.Logger
	mu    sync.Mutex
	ctx   context.Context // the daemon's; bot sets run under it
	cur   *chatBots
	stopC context.CancelFunc
	wait  func()
}

// tokens is the fingerprint of the running bots' tokens ("" without bots).
func (b *liveBots) tokens() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cur == nil {
		return ""
	}
	return b.cur.tokens
}

// running are the platforms whose bots run now.
func (b *liveBots) running() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	if b.cur != nil && b.cur.relay != nil {
		for _, s := range b.cur.relay.Statuses() {
			out = append(out, s.Platform)
		}
	}
	return out
}

// start runs c as the current set under ctx.
func (b *liveBots) start(ctx context.Context, c *chatBots) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.ctx = ctx
	b.run(c)
}

// run wires c to the schedules and starts it. Caller holds b.mu.
func (b *liveBots) run(c *chatBots) {
	if c.relay != nil {
		c.relay.SetSchedules(b.mgr)
	}
	b.sw.set(c.chat())
	ctx, cancel := context.WithCancel(b.ctx)
	b.cur, b.stopC, b.wait = c, cancel, c.start(ctx)
}

// replace stops the current set and starts c.
func (b *liveBots) replace(_ context.Context, c *chatBots) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.stopLocked()
	if b.ctx == nil || b.ctx.Err() != nil {
		return // the daemon is stopping
	}
	b.run(c)
}

// statuses are the current bots' connections; none while the daemon starts or stops.
func (b *liveBots) statuses() []api.BotStatus {
	if b == nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.cur.statuses()
}

// stop stops the current set and waits for it.
func (b *liveBots) stop() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.stopLocked()
}

func (b *liveBots) stopLocked() {
	if b.stopC != nil {
		b.sw.set(nil)
		b.stopC()
		b.wait()
		b.stopC, b.wait, b.cur = nil, nil, nil
	}
}

// chatSwitch is the schedules' Chat: whatever relay is current, or noChat.
type chatSwitch struct {
	mu  sync.RWMutex
	cur schedule.Chat
}

var _ schedule.Chat = (*chatSwitch)(nil)

func (s *chatSwitch) set(c schedule.Chat) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cur = c
}

func (s *chatSwitch) get(platform string) schedule.Chat {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.cur == nil {
		return noChat(platform)
	}
	return s.cur
}

func (s *chatSwitch) CheckChannel(platform, channel string) error {
	return s.get(platform).CheckChannel(platform, channel)
}

func (s *chatSwitch) StartRunThread(ctx context.Context, platform, channel, header, details string) (string, error) {
	return s.get(platform).StartRunThread(ctx, platform, channel, header, details)
}

func (s *chatSwitch) BindRun(ctx context.Context, platform, channel, thread, agentID, runID, by string) error {
	return s.get(platform).BindRun(ctx, platform, channel, thread, agentID, runID, by)
}

func (s *chatSwitch) Note(ctx context.Context, platform, channel, thread, text string) error {
	return s.get(platform).Note(ctx, platform, channel, thread, text)
}

func (s *chatSwitch) RunThread(ctx context.Context, platform, runID string) (string, string, bool) {
	return s.get(platform).RunThread(ctx, platform, runID)
}

// noChat is the Chat of a platform while no bot runs: it refuses all, naming the fix.
type noChat string

func (p noChat) err() error {
	return fmt.Errorf("no chat bot is enabled in this agentd: enable [%s] in the config and reload agentd (agentctl reload)", string(p))
}

func (p noChat) CheckChannel(string, string) error                          { return p.err() }
func (p noChat) Note(context.Context, string, string, string, string) error { return p.err() }
func (p noChat) StartRunThread(context.Context, string, string, string, string) (string, error) {
	return "", p.err()
}
func (p noChat) BindRun(context.Context, string, string, string, string, string, string) error {
	return p.err()
}
func (p noChat) RunThread(context.Context, string, string) (string, string, bool) {
	return "", "", false
}
