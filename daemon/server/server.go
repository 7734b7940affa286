// Package server assembles agentd: it opens the store, connects to Ollama, starts the agent
// supervisor and the schedules, and serves the local API on the unix socket until its
// context ends.
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
	"github.com/agentd/agentd/daemon/agent"
	"github.com/agentd/agentd/daemon/api"
	"github.com/agentd/agentd/daemon/client"
	"github.com/agentd/agentd/daemon/config"
	"github.com/agentd/agentd/daemon/llm"
	"github.com/agentd/agentd/daemon/schedules"
	"github.com/agentd/agentd/daemon/store"
)

// Run runs the daemon until ctx ends, then shuts down cleanly: model calls in flight are
// cancelled, event streams closed, and the store left consistent. ready, if not nil, is
// called once the socket accepts connections.
func Run(ctx context.Context, cfg *config.Config, log *slog.Logger, version string, ready func()) error {
	if err := os.MkdirAll(cfg.StateDir, 0o700); err != nil {
		return fmt.Errorf("state dir: %w", err)
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
	extra, bridge, err := components(cfg, lc, log)
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
	// The schedules' manager needs the supervisor and the supervisor reports run ends to
	// it; mgr is set before the supervisor starts, so no run ends before it is there.
	var mgr *schedules.Manager
	var chat *chatBots // made after the supervisor, which it serves; doctor reads it later
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
	overrides := map[string]agent.AgentOverrides{}
	for name, o := range cfg.Agents {
		overrides[name] = agent.AgentOverrides{Commands: o.Commands, DisabledComponents: o.DisabledComponents, Allow: o.Allow, Deny: o.Deny}
	}
	sup, err := agent.New(agent.Options{
		Store: st, LLM: lc, Model: cfg.Ollama.Model, SmartModel: cfg.Ollama.SmartModel,
		MaxContext: cfg.Ollama.MaxContext, KeepAlive: cfg.Ollama.KeepAlive.Ptr(),
		Directives: cfg.Directives(), Commands: cfg.Agent.Commands,
		Components: extra, ComponentOrder: cfg.Agent.ComponentOrder, DisabledComponents: cfg.Agent.DisabledComponents,
		Agents: overrides, Allow: cfg.Permissions.Allow, Deny: cfg.Permissions.Deny, AutoRead: cfg.Permissions.AutoRead,
		MaxInvalidReplies: cfg.Agent.MaxInvalidReplies, ContinuousLimit: cfg.Agent.ContinuousLimit,
		Limits:        commands.Limits{Timeout: cfg.Agent.CommandTimeout.Duration, OutputCap: cfg.Agent.OutputCap},
		WorkspaceRoot: cfg.WorkspaceRoot(), HistoryEpisodes: cfg.Agent.HistoryEpisodes,
		Memory: mem, Log: log, Version: version, StateDir: cfg.StateDir, HealthChecks: append(healthChecks(cfg, bridge), chatCheck(&chat)),
		OnRunEnd: func(e agent.RunEnd) { mgr.RunEnded(e) },
	})
	if err != nil {
		return err
	}
	chat, err = newBots(cfg, sup, st, log)
	if err != nil {
		return err
	}
	mgr = schedules.New(schedules.Options{Store: st, Agents: sup, Log: log, Grace: cfg.Schedules.Grace.Duration,
		Chat: chat.chat(), KeepAgents: cfg.Schedules.KeepAgents})
	if chat.relay != nil {
		chat.relay.SetSchedules(mgr)
	}

	ln, err := api.Listen(cfg.Socket)
	if err != nil {
		return err
	}
	agentsCtx, stopAgents := context.WithCancel(ctx)
	defer stopAgents()
	if err := sup.Start(agentsCtx); err != nil {
		ln.Close()
		return err
	}
	// The bots before the schedules, so a run that a missed firing starts is posted.
	waitBots := chat.start(agentsCtx)
	// After the supervisor: a firing missed while the daemon was down may start a run.
	if err := mgr.Start(agentsCtx); err != nil {
		stopAgents()
		waitBots()
		sup.Wait()
		ln.Close()
		return err
	}
	srv := &http.Server{
		Handler:           api.NewHandler(service{sup, mgr, chat}, log),
		ReadHeaderTimeout: 10 * time.Second,
		// Request contexts end with the daemon, so event streams close on shutdown.
		BaseContext: func(_ net.Listener) context.Context { return agentsCtx },
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	log.Info("agentd ready", "socket", cfg.Socket, "state_dir", cfg.StateDir, "ollama", lc.Host(), "model", cfg.Ollama.Model, "version", version)
	if ready != nil {
		ready()
	}

	var runErr error
	select {
	case <-ctx.Done():
	case err := <-serveErr:
		if !errors.Is(err, http.ErrServerClosed) {
			runErr = fmt.Errorf("api server: %w", err) // exit non-zero so a supervisor restarts us
		}
	}
	log.Info("agentd shutting down")
	mgr.Stop() // no new runs; each schedule's last fire time stored for the restart
	stopAgents()
	waitBots()
	shutCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	srv.Shutdown(shutCtx)
	sup.Wait()
	os.Remove(cfg.Socket)
	log.Info("agentd stopped")
	return runErr
}

// service is the local API: the supervisor serves the agents, the manager the schedules.
type service struct {
	api.AgentService
	api.ScheduleService
	chat *chatBots
}

// Status adds the chat bots' connections to the supervisor's status.
func (s service) Status(ctx context.Context) (*client.Status, error) {
	st, err := s.AgentService.Status(ctx)
	if err != nil {
		return nil, err
	}
	st.Bots = s.chat.statuses()
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
