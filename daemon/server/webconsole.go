package server

import (
	"context"
	"os/user"
	"sync"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/daemon/config"
	"github.com/agentd/agentd/daemon/schedule"
	"github.com/agentd/agentd/daemon/web"
)

// webConsole is the browser console ([web_console]): made with the services, serving
// from the daemon's start when enabled, else from the first `agentctl web`.
type webConsole struct {
	cfg config.WebConsoleConfig // not reloaded: a change of listen needs a restart
	con *web.Console

	mu  sync.Mutex
	ctx context.Context // the part's context while it runs; nil before and after
}

var _ api.WebService = (*webConsole)(nil)

// WebLogin serves the console if it is not serving yet and mints a one-time login URL.
func (w *webConsole) WebLogin(context.Context) (*api.WebLogin, error) {
	w.mu.Lock()
	ctx := w.ctx
	w.mu.Unlock()
	if ctx == nil || w.con == nil {
		return nil, api.Errorf(api.ErrConflict, "the daemon is starting or stopping: try `agentctl web` again in a moment")
	}
	base, err := w.con.Listen(ctx, w.cfg.Listen)
	if err != nil {
		return nil, api.Errorf(api.ErrConflict, "%v", err)
	}
	login, err := w.con.LoginURL()
	if err != nil {
		return nil, err
	}
	return &api.WebLogin{URL: base, LoginURL: login}, nil
}

// WebLogout ends every session of the console: their streams stop at once.
func (w *webConsole) WebLogout(context.Context) (*api.WebLogout, error) {
	if w.con == nil {
		return &api.WebLogout{}, nil
	}
	return &api.WebLogout{Sessions: w.con.EndSessions()}, nil
}

// status is where the console serves, for agentctl status.
func (w *webConsole) status() api.WebStatus {
	if w.con == nil {
		return api.WebStatus{}
	}
	return api.WebStatus{URL: w.con.URL()}
}

// webPart serves the console when [web_console] enabled; `agentctl web` may start it
// later under the same context. Stopping ends its event streams and closes it.
func (d *daemon) webPart() part {
	var bg background
	return part{name: "web console",
		start: func(ctx context.Context) error {
			con, err := web.New(web.Options{Service: d.service(), Log: d.log, User: osUser(), CheckWhen: schedule.CheckWhenForm})
			if err != nil {
				return err
			}
			d.web.con = con
			ctx = bg.context(ctx)
			d.web.mu.Lock()
			d.web.ctx = ctx
			d.web.mu.Unlock()
			if d.cfg.WebConsole.Enabled {
				if _, err := con.Listen(ctx, d.cfg.WebConsole.Listen); err != nil {
					bg.stop()
					return err
				}
			}
			return nil
		},
		stop: func(ctx context.Context) error {
			d.web.mu.Lock()
			d.web.ctx = nil
			d.web.mu.Unlock()
			bg.stop()
			return d.web.con.Close(ctx)
		},
	}
}

// osUser is who decisions made in the console are recorded as: the daemon's user, who
// alone can read the login URL `agentctl web` prints.
func osUser() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	return "web"
}
