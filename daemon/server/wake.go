package server

import (
	"context"
	"log/slog"
	"path/filepath"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/commands/shell"
	"github.com/agentd/agentd/commands/web"
	"github.com/agentd/agentd/daemon/config"
	"github.com/agentd/agentd/daemon/schedule"
	"github.com/agentd/agentd/daemon/schedule/wake"
	"github.com/agentd/agentd/daemon/store"
)

// scheduleWake is what the schedules check their wake conditions with: the engine (its
// checkpoints in the state dir, out of every agent's reach), read_webpage's fetcher and
// guard, and the agents' execute_shell for check commands.
func scheduleWake(cfg *config.Config, st *store.Store, extra []commands.Component, log *slog.Logger) (schedule.Wake, error) {
	eng, err := wake.New(wake.Options{Store: st, Dir: filepath.Join(cfg.StateDir, "wake"), Fetcher: pageFetcher(cfg), Log: log})
	if err != nil {
		return schedule.Wake{}, err
	}
	so := shellOptions(cfg)
	w := schedule.Wake{Engine: eng, ReadOnly: so.ReadOnlyPaths, Hidden: so.Hidden()}
	for _, c := range extra {
		if l, ok := c.(commands.CommandList); ok && l.ID == "shell" {
			for _, cmd := range l.Cmds {
				if ch, ok := cmd.(shell.Checker); ok && cmd.Spec().Name == "execute_shell" {
					w.Shell = ch
				}
			}
		}
	}
	return w, nil
}

// pageFetcher is how read_webpage, and a schedule's --when-url, fetch a page: one
// fetcher's settings and one network guard for both.
func pageFetcher(cfg *config.Config) *web.Fetcher {
	w := cfg.WebCommands
	return &web.Fetcher{MaxBytes: int64(w.MaxPageBytes), Timeout: w.Timeout.Duration, AllowPrivate: w.AllowPrivate}
}

// scheduleChecks are doctor's lines on the schedules' wake checks (the manager is made
// after the supervisor, whose doctor asks).
func (d *daemon) scheduleChecks(ctx context.Context) []api.Check {
	if d.mgr == nil {
		return nil
	}
	return d.mgr.WakeChecks(ctx)
}
