// Package server assembles agentd: it opens the store, connects to Ollama, starts the agent
// supervisor, the schedules and the team engine, and serves the local API on the unix
// socket until its context ends.
//
// cmd/agentd parses flags and config and calls Run; integration tests build that binary.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/commands/shell"
	"github.com/agentd/agentd/daemon/agent"
	"github.com/agentd/agentd/daemon/agentprotocol"
	"github.com/agentd/agentd/daemon/api"
	"github.com/agentd/agentd/daemon/client"
	"github.com/agentd/agentd/daemon/config"
	"github.com/agentd/agentd/daemon/llm"
	"github.com/agentd/agentd/daemon/schedules"
	"github.com/agentd/agentd/daemon/statedir"
	"github.com/agentd/agentd/daemon/store"
	"github.com/agentd/agentd/daemon/team"
)

// Run runs the daemon until ctx ends, then shuts down cleanly: model calls in flight are
// cancelled, event streams closed, and the store left consistent. ready, if not nil, is
// called once the socket accepts connections. It cannot reload its config: see RunWith.
func Run(ctx context.Context, cfg *config.Config, log *slog.Logger, version string, ready func()) error {
	return RunWith(ctx, cfg, log, Options{Version: version, Ready: ready})
}

// Options are what RunWith needs beyond the config.
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

// RunWith is Run with reloads: on every value from opt.Reloads and on POST /v0/reload it
// re-reads the config through opt.Load and applies what can change while agents run.
func RunWith(ctx context.Context, cfg *config.Config, log *slog.Logger, opt Options) error {
	version, ready := opt.Version, opt.Ready
	if opt.Notify == nil {
		opt.Notify = func(string) {}
	}
	if opt.IsAgentCommand == nil {
		opt.IsAgentCommand = func(pid int32) bool { return shell.CommandAncestor(int(pid)) }
	}
	live := &liveConfig{}
	live.store(cfg)
	// Before the store opens: SQLite gives its -wal and -shm the database's mode.
	if err := statedir.Secure(cfg.StateDir, cfg.WorkspaceRoot()); err != nil {
		return err
	}
	var httpTok string
	if cfg.HTTP.Listen != "" {
		// Before anything opens: a missing token is a config mistake, said at once.
		var err error
		if httpTok, err = httpToken(cfg.HTTP); err != nil {
			return err
		}
	}
	st, err := store.Open(ctx, filepath.Join(cfg.StateDir, "agentd.db"))
	if err != nil {
		return err
	}
	defer st.Close()

	lc, err := llm.New(cfg.Ollama.Host, &http.Client{Timeout: cfg.Ollama.RequestTimeout.Duration})
	if err != nil {
		return fmt.Errorf("ollama host: %w", err)
	}
	mx := newMetrics(lc)
	extra, bridge, err := components(cfg, live, lc, log)
	if err != nil {
		return err
	}
	if err := checkComponents(cfg, extra); err != nil {
		return err
	}
	if bridge != nil {
		// Servers connect in the background: a slow or dead one must not hold up the
		// daemon; its tools appear in prompts once it has listed them.
		go bridge.Start(ctx)
		defer bridge.Close()
	}
	// The schedules' manager and the team engine need the supervisor and the supervisor
	// reports run ends to them; both are set before the supervisor starts, so no run ends
	// before they are there.
	var mgr *schedules.Manager
	var liveChat *liveBots // the chat bots, made after the supervisor they serve; doctor reads them
	var teams *team.Engine
	mem, err := openMemory(cfg, lc, log)
	if err != nil {
		return err
	}
	if mem.Index != nil {
		defer func() {
			if err := mem.Index.Close(); err != nil {
				log.Warn("closing the memory index", "err", err)
			}
		}()
	}
	// The TCP listener as status and doctor see it: filled once it is bound, below.
	httpL := &httpListener{cfg: cfg.HTTP}
	overrides := map[string]agent.AgentOverrides{}
	for name, o := range cfg.Agents {
		overrides[name] = agent.AgentOverrides{Commands: o.Commands, DisabledComponents: o.DisabledComponents, Allow: o.Allow, Deny: o.Deny,
			Budget: overrideBudget(cfg, o)}
	}
	sup, err := agent.New(agent.Options{
		Store: st, LLM: lc, Model: cfg.Ollama.Model, SmartModel: cfg.Ollama.SmartModel,
		MaxContext: cfg.Ollama.MaxContext, KeepAlive: cfg.Ollama.KeepAlive.Ptr(),
		Directives: cfg.Directives(), Commands: cfg.Agent.Commands,
		Components: extra, ComponentOrder: cfg.Agent.ComponentOrder, DisabledComponents: cfg.Agent.DisabledComponents,
		Agents: overrides, Allow: cfg.Permissions.Allow, Deny: cfg.Permissions.Deny, AutoRead: cfg.Permissions.AutoRead,
		MaxInvalidReplies: cfg.Agent.MaxInvalidReplies, ContinuousLimit: cfg.Agent.ContinuousLimit,
		MaxHelperDepth: cfg.Agent.MaxHelperDepth, MaxHelpers: cfg.Agent.MaxHelpers,
		Limits:        commands.Limits{Timeout: cfg.Agent.CommandTimeout.Duration, OutputCap: cfg.Agent.OutputCap},
		WorkspaceRoot: cfg.WorkspaceRoot(), HistoryEpisodes: cfg.Agent.HistoryEpisodes,
		Memory: mem, Log: log, Version: version, StateDir: cfg.StateDir, HealthChecks: append(healthChecks(cfg, bridge), chatCheck(&liveChat), httpL.check),
		OnRunEnd: func(e agent.RunEnd) { mgr.RunEnded(e); teams.RunEnded(e) }, Metrics: mx, AgentBudget: agentBudget(cfg),
	})
	if err != nil {
		return err
	}
	// The team engine reads the supervisor's live settings, so a reload's model reaches it.
	// It is made before the bots, which start team runs from chat.
	teams, err = team.New(team.Options{Store: st, LLM: lc, Agents: sup, Log: log, Settings: sup.Settings})
	if err != nil {
		return err
	}
	chat, err := newBots(cfg, sup, teams, st, log, mx)
	if err != nil {
		return err
	}
	// The schedules reach the bots through a switch, since a reload replaces the bots.
	sw := &chatSwitch{}
	mgr = schedules.New(schedules.Options{Store: st, Agents: sup, Log: log, Grace: cfg.Schedules.Grace.Duration,
		Chat: sw, KeepAgents: cfg.Schedules.KeepAgents, Metrics: mx})
	bots := &liveBots{svc: func(c *config.Config) (*chatBots, error) { return newBots(c, sup, teams, st, log, mx) }, mgr: mgr, sw: sw, log: log}
	liveChat = bots
	rl := &reloader{load: opt.Load, path: opt.ConfigPath, started: cfg, cur: cfg, live: live, extra: extra,
		sup: sup, mgr: mgr, bots: bots, level: opt.LogLevel, notify: opt.Notify, log: log}

	ln, err := api.Listen(cfg.Socket)
	if err != nil {
		return err
	}
	tcpLn, err := listenTCP(cfg.HTTP) // nil when [http] listen is unset
	if err != nil {
		ln.Close()
		return err
	}
	httpL.bound(tcpLn, httpTok)
	closeListeners := func() {
		ln.Close()
		if tcpLn != nil {
			tcpLn.Close()
		}
	}
	agentsCtx, stopAgents := context.WithCancel(ctx)
	defer stopAgents()
	if err := sup.Start(agentsCtx); err != nil {
		closeListeners()
		return err
	}
	// The bots before the schedules, so a run that a missed firing starts is posted.
	bots.start(agentsCtx, chat)
	// After the supervisor: a firing missed while the daemon was down may start a run.
	if err := mgr.Start(agentsCtx); err != nil {
		stopAgents()
		bots.stop()
		sup.Wait()
		closeListeners()
		return err
	}
	// After the supervisor: a team waiting for a role agent's run finds it resumed.
	if err := teams.Start(agentsCtx); err != nil {
		mgr.Stop()
		stopAgents()
		bots.stop()
		sup.Wait()
		closeListeners()
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("GET /v0/metrics", metricsHandler(mx, sup))
	mux.Handle("/", api.NewHandler(service{sup, mgr, rl, teams, bots, httpL, shellStatus(cfg)}, log))
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		// Request contexts end with the daemon, so event streams close on shutdown.
		BaseContext: func(_ net.Listener) context.Context { return agentsCtx },
	}
	api.GuardPeers(srv, opt.IsAgentCommand, log) // nothing an agent runs reaches the daemon's control
	serveErr := make(chan error, 2)
	go func() { serveErr <- srv.Serve(ln) }()
	var tcpSrv *http.Server
	if tcpLn != nil {
		th := newTCPHandler(httpTok, tcpLn.Addr(), cfg.HTTP.Listen, log)
		th.Metrics = metricsHandler(mx, sup)
		if cfg.HTTP.AgentProtocol {
			th.AgentProtocol = agentprotocol.New(agentprotocol.Options{Agents: sup, Log: log})
		}
		tcpSrv = &http.Server{
			Handler:           th,
			ReadHeaderTimeout: 10 * time.Second,
			BaseContext:       func(_ net.Listener) context.Context { return agentsCtx },
		}
		go func() { serveErr <- tcpSrv.Serve(tcpLn) }()
		log.Info("http listener ready", "addr", tcpLn.Addr().String(), "metrics", th.Metrics != nil, "agent_protocol", th.AgentProtocol != nil)
	}
	log.Info("agentd ready", "socket", cfg.Socket, "state_dir", cfg.StateDir, "ollama", lc.Host(), "model", cfg.Ollama.Model, "version", version)
	if ready != nil {
		ready()
	}
	if opt.Reloads != nil {
		go func() {
			for {
				select {
				case <-agentsCtx.Done():
					return
				case <-opt.Reloads:
					rl.Reload(agentsCtx) // logs what it did, or every problem
				}
			}
		}()
	}

	var runErr error
	select {
	case <-ctx.Done():
	case err := <-serveErr:
		if !errors.Is(err, http.ErrServerClosed) {
			runErr = fmt.Errorf("api server: %w", err) // exit non-zero so a supervisor restarts us (socket or TCP)
		}
	}
	log.Info("agentd shutting down")
	mgr.Stop() // no new runs; each schedule's last fire time stored for the restart
	stopAgents()
	bots.stop()
	shutCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	srv.Shutdown(shutCtx)
	if tcpSrv != nil {
		tcpSrv.Shutdown(shutCtx)
	}
	teams.Wait()
	sup.Wait()
	os.Remove(cfg.Socket)
	log.Info("agentd stopped")
	return runErr
}

// service is the local API: the supervisor serves the agents, the manager the
// schedules, the reloader reloads, the engine serves the team runs.
type service struct {
	api.AgentService
	api.ScheduleService
	api.DaemonService
	api.TeamService
	bots  *liveBots
	http  *httpListener
	shell client.ShellStatus // [shell] is not reloaded: fixed at start
}

// Status adds the chat bots' connections, the TCP listener and the shell's sandbox to
// the supervisor's status.
func (s service) Status(ctx context.Context) (*client.Status, error) {
	st, err := s.AgentService.Status(ctx)
	if err != nil {
		return nil, err
	}
	st.Bots = s.bots.statuses()
	st.HTTP = s.http.status()
	st.Shell = s.shell
	return st, nil
}

// checkComponents refuses component names in config that name no component.
func checkComponents(cfg *config.Config, extra []commands.Component) error {
	var errs []error
	check := func(key string, names []string, disabling bool) {
		if err := agent.CheckComponents(extra, names, disabling); err != nil {
			errs = append(errs, fmt.Errorf("config: %s: %w", key, err))
		}
	}
	check("agent.disabled_components", cfg.Agent.DisabledComponents, true)
	check("agent.component_order", cfg.Agent.ComponentOrder, false)
	for name, o := range cfg.Agents {
		check("agents."+name+".disabled_components", o.DisabledComponents, true)
	}
	return errors.Join(errs...)
}
