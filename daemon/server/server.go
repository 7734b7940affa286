// Package server assembles agentd: it opens the store, connects to Ollama, starts the agent
// supervisor, the schedules and the team engine, and serves the local API on the unix
// socket until its context ends.
//
// Each of those is a part (part.go) with a start and a stop; daemon.go lists them in the
// order they start, and they stop in reverse, once, however the daemon ends.
//
// cmd/agentd parses flags and config and calls Run; integration tests build that binary.
package server

import (
	"context"
	"log/slog"
	"os"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/commands/shell"
	"github.com/agentd/agentd/daemon/agent"
	"github.com/agentd/agentd/daemon/config"
	"github.com/agentd/agentd/daemon/localapi"
	"github.com/agentd/agentd/daemon/schedule"
	"github.com/agentd/agentd/daemon/statedir"
	"github.com/agentd/agentd/daemon/team"
)

// Options are what Run needs beyond the config.
type Options struct {
	Version string
	// Ready, if set, is called once the socket accepts connections.
	Ready func()
	// Load re-reads the config for a reload, with the flags applied again; nil refuses
	// reloads. ConfigPath names the file in messages ("" for the defaults).
	Load       func() (*config.Config, error)
	ConfigPath string
	// Reloads, when set, asks for a reload on every value (cmd/agentd sends SIGHUP here).
	Reloads <-chan os.Signal
	// LogLevel, when set, is log's level, which a reload sets from log.level.
	LogLevel *slog.LevelVar
	// Notify, when set, tells the service manager about state changes ("RELOADING=1",
	// "READY=1"; sd_notify under systemd).
	Notify func(state string)
	// IsAgentCommand reports whether a process is a command an agent runs or descends from
	// one: the socket refuses its requests. Nil means shell.CommandAncestor, the commands
	// this daemon runs. Peers of another user than the daemon's (root excepted) are refused
	// either way.
	IsAgentCommand func(pid int32) bool
}

// Run runs the daemon until ctx ends, then shuts down cleanly: model calls in flight are
// cancelled, event streams closed, and the store left consistent. On every value from
// opt.Reloads and on POST /v0/reload it re-reads the config through opt.Load and applies
// what can change while agents run (with no opt.Load, reloads are refused).
//
// The daemon is a list of parts (daemon.parts) started in order and stopped in reverse,
// once: on ctx's end, on a server that stops serving, and on a part failing to start.
func Run(ctx context.Context, cfg *config.Config, log *slog.Logger, opt Options) error {
	if opt.Notify == nil {
		opt.Notify = func(string) {}
	}
	if opt.IsAgentCommand == nil {
		opt.IsAgentCommand = func(pid int32) bool { return shell.CommandAncestor(int(pid)) }
	}
	d := &daemon{cfg: cfg, log: log, opt: opt, live: &liveConfig{}, failed: make(chan error, 1)}
	d.live.store(cfg)
	// Before the store opens: SQLite gives its -wal and -shm the database's mode.
	if err := statedir.Secure(cfg.StateDir, cfg.WorkspaceRoot()); err != nil {
		return err
	}
	if cfg.HTTP.Listen != "" {
		// Before anything opens: a missing token is a config mistake, said at once.
		var err error
		if d.httpTok, err = httpToken(cfg.HTTP); err != nil {
			return &config.Error{Path: opt.ConfigPath, Problems: []config.Problem{{Key: httpSecret(cfg.HTTP).key(), Msg: err.Error()}}}
		}
	}
	life := &lifecycle{log: log}
	if err := life.start(ctx, d.parts()...); err != nil {
		return err
	}
	runErr := d.wait(ctx)
	log.Info("agentd shutting down")
	sctx, cancel := stopCtx(ctx)
	defer cancel()
	// A part that stops badly is logged; the exit status says why the daemon stopped.
	_ = life.stop(sctx)
	log.Info("agentd stopped")
	return runErr
}

// build makes the supervisor, the team engine, the chat bots, the schedules' manager and
// the reloader. Nothing runs yet, so there is nothing to stop.
func (d *daemon) build(context.Context) error {
	cfg, log := d.cfg, d.log
	// Made before the supervisor, whose doctor checks read them.
	d.httpL = &httpListener{cfg: cfg.HTTP}
	d.web = &webConsole{cfg: cfg.WebConsole}
	d.bots = &liveBots{sw: &chatSwitch{}, log: log}
	sup, err := agent.New(d.agentOptions())
	if err != nil {
		return err
	}
	// The schedules, team runs and bots reach the supervisor's parts they call.
	agents := agentsOf(sup)
	// The team engine reads the supervisor's live settings, so a reload's model reaches it.
	// It is made before the bots, which start team runs from chat.
	teams, err := team.New(team.Options{Store: d.st, LLM: d.lc, Agents: agents.runAgents, Log: log, Settings: sup.ModelSettings})
	if err != nil {
		return err
	}
	chat, err := newBots(cfg, agents.chatAgents, teams, d.st, log, d.mx)
	if err != nil {
		return err
	}
	wk, err := scheduleWake(cfg, d.st, d.extra, log)
	if err != nil {
		return err
	}
	// The schedules reach the bots through a switch, since a reload replaces the bots.
	mgr := schedule.New(schedule.Options{Store: d.st, Agents: agents.runAgents, Log: log, Grace: cfg.Schedules.Grace.Duration,
		Chat: d.bots.sw, KeepAgents: cfg.Schedules.KeepAgents, Metrics: d.mx, Wake: wk})
	d.bots.svc = func(c *config.Config) (*chatBots, error) {
		return newBots(c, agents.chatAgents, teams, d.st, log, d.mx)
	}
	d.bots.mgr = mgr
	// Before the supervisor starts, which is when runs can end.
	d.runEnds.add(mgr.RunEnded)
	d.runEnds.add(teams.RunEnded)
	d.sup, d.teams, d.mgr, d.chat = sup, teams, mgr, chat
	d.rl = &reloader{load: d.opt.Load, path: d.opt.ConfigPath, started: cfg, cur: cfg, live: d.live,
		sup: sup, mgr: mgr, bots: d.bots, level: d.opt.LogLevel, notify: d.opt.Notify, log: log}
	return nil
}

// agentOptions are the supervisor's options: the config's part (agent.OptionsOf, whose
// settings each reload sets again) and the parts started so far.
func (d *daemon) agentOptions() agent.Options {
	cfg, opt := d.cfg, agent.OptionsOf(d.cfg)
	opt.Store, opt.LLM, opt.Components, opt.WorkspaceRoot = d.st, d.lc, d.extra, cfg.WorkspaceRoot()
	opt.Memory, opt.Log, opt.Version, opt.StateDir = d.mem, d.log, d.opt.Version, cfg.StateDir
	opt.HealthChecks = append(healthChecks(cfg, d.bridge, d.boxes), chatCheck(d.bots), d.httpL.check, d.scheduleChecks)
	opt.OnRunEnd, opt.Metrics, opt.OnAgentRemoved = d.runEnds.deliver, d.mx, d.boxes.Remove
	return opt
}

// service is the local API: the supervisor serves the agents, the manager the
// schedules, the reloader reloads, the engine serves the team runs.
type service struct {
	agentAPI
	localapi.ScheduleService
	localapi.DaemonService
	localapi.TeamService
	*webConsole
	bots  *liveBots
	http  *httpListener
	shell api.ShellStatus // [shell] is not reloaded: fixed at start
	// hostFrom is where [[ollama.hosts]] came from; it changes only with a restart.
	hostFrom string
}

// service is the local API over the parts the services part built.
func (d *daemon) service() service {
	return service{agentsOf(d.sup), d.mgr, d.rl, d.teams, d.web, d.bots, d.httpL, shellStatus(d.cfg, d.boxes), d.cfg.Ollama.HostFrom}
}

// Status adds the chat bots' connections, the TCP listener and the shell's sandbox to
// the supervisor's status.
func (s service) Status(ctx context.Context) (*api.Status, error) {
	st, err := s.Views.Status(ctx)
	if err != nil {
		return nil, err
	}
	st.Ollama.HostFrom = s.hostFrom
	st.Bots = s.bots.statuses()
	st.HTTP = s.http.status()
	st.Shell = s.shell
	st.Web = s.webConsole.status()
	return st, nil
}

// checkConfig refuses what CheckConfig finds, for a config loaded without it (Run's
// callers need not pass the checker to config.Load): a start and a reload refuse alike.
func checkConfig(cfg *config.Config) error {
	if probs := CheckConfig(cfg); len(probs) > 0 {
		return &config.Error{Problems: probs}
	}
	return nil
}
