package server

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/commands/mcp"
	"github.com/agentd/agentd/commands/shell"
	"github.com/agentd/agentd/daemon/agent"
	"github.com/agentd/agentd/daemon/agentprotocol"
	"github.com/agentd/agentd/daemon/config"
	"github.com/agentd/agentd/daemon/llm"
	"github.com/agentd/agentd/daemon/localapi"
	"github.com/agentd/agentd/daemon/metrics"
	"github.com/agentd/agentd/daemon/run"
	"github.com/agentd/agentd/daemon/schedule"
	"github.com/agentd/agentd/daemon/store"
	"github.com/agentd/agentd/daemon/team"
)

// daemon is what Run's parts share. Each field below the first group is filled by the
// start of the part named beside it and read only by the parts after that one, which the
// lifecycle starts only once it is up.
type daemon struct {
	cfg     *config.Config
	log     *slog.Logger
	opt     Options
	live    *liveConfig
	httpTok string // [http]'s bearer token, read before anything opens
	// failed gets why a server stopped serving: the daemon stops, and exits non-zero.
	failed chan error
	// runEnds takes the supervisor's run ends to the schedules and the team engine; it
	// works from its zero value, so the supervisor's hook works before the later parts exist.
	runEnds runEnds

	st     *store.Store         // store
	lc     *llm.Client          // llm
	mx     *metrics.Metrics     // llm
	extra  []commands.Component // components
	bridge *mcp.Bridge          // components; nil without [[mcp.servers]]
	boxes  *shell.Boxes         // components: agents' cgroups; nil without [shell]
	mem    agent.MemoryOptions  // memory
	httpL  *httpListener        // services; the tcp listener part records what it bound
	sup    *agent.Supervisor    // services
	teams  *team.Engine         // services
	mgr    *schedule.Manager    // services
	chat   *chatBots            // services: the first bot set, which the bots part starts
	bots   *liveBots            // services
	rl     *reloader            // services
	ln     net.Listener         // socket
	tcpLn  net.Listener         // tcp listener; nil when [http] listen is unset
	web    *webConsole          // services; its console is made by the web console part
}

// parts are the daemon's parts in the order they start; they stop in reverse. The
// socket is bound before the agents start, so a second daemon on the same socket fails
// before it runs anything, and served only once everything it serves is up.
func (d *daemon) parts() []part {
	return []part{
		d.storePart(),
		d.llmPart(),
		d.componentsPart(),
		d.memoryPart(),
		{name: "services", start: d.build},
		d.socketPart(),
		d.tcpListenerPart(),
		d.agentsPart(),
		// The bots before the schedules, so a run that a missed firing starts is posted.
		d.botsPart(),
		// After the supervisor: a firing missed while the daemon was down may start a run.
		d.schedulesPart(),
		// After the supervisor: a team waiting for a role agent's run finds it resumed.
		d.teamsPart(),
		// Before the local API, which serves agentctl web.
		d.webPart(),
		d.localAPIPart(),
		d.httpPart(),
		{name: "ready", start: d.ready},
		d.reloadPart(),
	}
}

func (d *daemon) storePart() part {
	return part{name: "store",
		start: func(ctx context.Context) (err error) {
			d.st, err = store.Open(ctx, filepath.Join(d.cfg.StateDir, "agentd.db"))
			return err
		},
		stop: func(context.Context) error { return d.st.Close() },
	}
}

// llmPart makes the Ollama client, a pool of the configured hosts with its queue, and
// the metrics that count its calls.
func (d *daemon) llmPart() part {
	return part{name: "llm", start: func(context.Context) error {
		lc, err := llm.NewPool(poolOptions(d.cfg, d.log))
		if err != nil {
			return fmt.Errorf("ollama host: %w", err)
		}
		d.lc, d.mx = lc, newMetrics(lc)
		return nil
	}, stop: func(context.Context) error {
		d.lc.Close() // the pool's prober
		return nil
	}}
}

// componentsPart builds web, shell and MCP. MCP servers connect in the background: a
// slow or dead one must not hold up the daemon; its tools appear in prompts once listed.
func (d *daemon) componentsPart() part {
	var bg background
	return part{name: "components",
		start: func(ctx context.Context) error {
			if err := checkConfig(d.cfg); err != nil {
				return err
			}
			boxes := newBoxes(d.cfg, d.log)
			extra, bridge, err := components(d.cfg, d.live, d.lc, boxes, d.log)
			if err != nil {
				closeBoxes(boxes, d.log)
				return err
			}
			d.boxes = boxes
			d.extra, d.bridge = extra, bridge
			if bridge != nil {
				ctx := bg.context(ctx)
				bg.wg.Go(func() { bridge.Start(ctx) })
			}
			return nil
		},
		stop: func(context.Context) error {
			bg.stop() // Start returns once its context ends; then Close waits for the servers
			if d.bridge != nil {
				d.bridge.Close()
			}
			closeBoxes(d.boxes, d.log) // after the agents part stopped: no command runs
			return nil
		},
	}
}

// closeBoxes removes the agents' cgroups; one a program still holds is logged.
func closeBoxes(b *shell.Boxes, log *slog.Logger) {
	if err := b.Close(); err != nil {
		log.Warn("agents' cgroups not all removed", "err", err)
	}
}

func (d *daemon) memoryPart() part {
	return part{name: "memory",
		start: func(context.Context) (err error) {
			d.mem, err = openMemory(d.cfg, d.lc, d.log)
			return err
		},
		stop: func(context.Context) error {
			if d.mem.Index == nil {
				return nil
			}
			if err := d.mem.Index.Close(); err != nil {
				return fmt.Errorf("closing the memory index: %w", err)
			}
			return nil
		},
	}
}

// socketPart binds the local API's socket (localapi.Listen refuses one a live daemon answers
// on); the local API part serves it. Stopping removes the socket file.
func (d *daemon) socketPart() part {
	return part{name: "socket",
		start: func(context.Context) (err error) {
			d.ln, err = localapi.Listen(d.cfg.Socket)
			return err
		},
		stop: func(context.Context) error {
			d.ln.Close() // already closed when the local API served it
			if err := os.Remove(d.cfg.Socket); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
			return nil
		},
	}
}

// tcpListenerPart binds [http] listen, when set; the http part serves it.
func (d *daemon) tcpListenerPart() part {
	return part{name: "tcp listener",
		start: func(context.Context) (err error) {
			if d.tcpLn, err = listenTCP(d.cfg.HTTP); err != nil {
				return err
			}
			d.httpL.bound(d.tcpLn, d.httpTok)
			return nil
		},
		stop: func(context.Context) error {
			if d.tcpLn != nil {
				d.tcpLn.Close() // already closed when the http part served it
			}
			return nil
		},
	}
}

// localAPIPart serves the local API on the socket, to no command an agent runs.
func (d *daemon) localAPIPart() part {
	var s serving
	return part{name: "local API",
		start: func(ctx context.Context) error {
			mux := http.NewServeMux()
			mux.Handle("GET /v0/metrics", metricsHandler(d.mx, d.sup))
			mux.Handle("/", localapi.NewHandler(d.service(), d.log))
			srv := &http.Server{Handler: mux}
			localapi.GuardPeers(srv, d.opt.IsAgentCommand, d.log) // nothing an agent runs reaches the daemon's control
			s.serve(ctx, srv, d.ln, d.failed)
			return nil
		},
		stop: s.stop,
	}
}

// httpPart serves the TCP listener ([http]), when bound: /metrics and the Agent Protocol.
func (d *daemon) httpPart() part {
	var s serving
	return part{name: "http",
		start: func(ctx context.Context) error {
			if d.tcpLn == nil {
				return nil
			}
			th := newTCPHandler(d.httpTok, d.tcpLn.Addr(), d.cfg.HTTP.Listen, d.log)
			th.Metrics = metricsHandler(d.mx, d.sup)
			if d.cfg.HTTP.AgentProtocol {
				th.AgentProtocol = agentprotocol.New(agentprotocol.Options{Agents: agentsOf(d.sup).chatAgents, Log: d.log})
			}
			s.serve(ctx, &http.Server{Handler: th}, d.tcpLn, d.failed)
			d.log.Info("http listener ready", "addr", d.tcpLn.Addr().String(), "metrics", th.Metrics != nil, "agent_protocol", th.AgentProtocol != nil)
			return nil
		},
		stop: s.stop,
	}
}

// runUnder is a part that runs under a context of its own from start until stop, which
// ends that context and calls wait; a start that fails is ended and waited for the same way.
func runUnder(name string, start func(ctx context.Context) error, wait func()) part {
	var bg background
	end := func() { bg.stop(); wait() }
	return part{name: name,
		start: func(ctx context.Context) error {
			if err := start(bg.context(ctx)); err != nil {
				end()
				return err
			}
			return nil
		},
		stop: func(context.Context) error { end(); return nil },
	}
}

// agentsPart runs the supervisor: stopping it cancels the agents' model calls and waits
// for every agent loop; each agent's state stays as stored, to resume on the next start.
func (d *daemon) agentsPart() part {
	return runUnder("agents", func(ctx context.Context) error { return d.sup.Start(ctx) }, func() { d.sup.Wait() })
}

func (d *daemon) botsPart() part {
	return runUnder("bots", func(ctx context.Context) error { d.bots.start(ctx, d.chat); return nil }, func() { d.bots.stop() })
}

func (d *daemon) teamsPart() part {
	return runUnder("teams", func(ctx context.Context) error { return d.teams.Start(ctx) }, func() { d.teams.Wait() })
}

// schedulesPart fires the schedules. Stopping it first stops the firing loop (no new
// runs; each schedule's last fire time stored for the restart), then ends its context.
func (d *daemon) schedulesPart() part {
	var bg background
	return part{name: "schedules",
		start: func(ctx context.Context) error {
			if err := d.mgr.Start(bg.context(ctx)); err != nil {
				bg.stop()
				return err
			}
			return nil
		},
		stop: func(context.Context) error {
			d.mgr.Stop()
			bg.stop()
			return d.mgr.Close() // the wake checks' checkpoints, once no firing checks
		},
	}
}

// reloadPart reloads the config on every value from opt.Reloads (SIGHUP).
func (d *daemon) reloadPart() part {
	var bg background
	return part{name: "reload",
		start: func(ctx context.Context) error {
			if d.opt.Reloads == nil {
				return nil
			}
			ctx = bg.context(ctx)
			bg.wg.Go(func() {
				for {
					select {
					case <-ctx.Done():
						return
					case <-d.opt.Reloads:
						d.rl.Reload(ctx) // logs what it did, or every problem
					}
				}
			})
			return nil
		},
		stop: func(context.Context) error { bg.stop(); return nil },
	}
}

// ready says the daemon is up: the socket serves, so a client told so can connect.
func (d *daemon) ready(context.Context) error {
	d.log.Info("agentd ready", "socket", d.cfg.Socket, "state_dir", d.cfg.StateDir, "ollama", d.lc.Host(), "model", d.cfg.Ollama.Model, "version", d.opt.Version)
	if d.opt.Ready != nil {
		d.opt.Ready()
	}
	return nil
}

// wait blocks until ctx ends (nil) or a server stops serving (why).
func (d *daemon) wait(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return nil
	case err := <-d.failed:
		return err
	}
}

// runEnds hands every run end the supervisor reports to the parts that follow runs. Its
// zero value works before any of them is added; they are added before the supervisor
// starts, so none misses an end.
type runEnds struct {
	mu  sync.Mutex
	fns []func(run.End)
}

func (r *runEnds) add(f func(run.End)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fns = append(r.fns, f)
}

// deliver is the supervisor's OnRunEnd.
func (r *runEnds) deliver(e run.End) {
	r.mu.Lock()
	fns := r.fns
	r.mu.Unlock()
	for _, f := range fns {
		f(e)
	}
}

// serving serves one listener from a part's start to its stop. Requests run under the
// part's context, which stop ends before shutting down, so event streams close at once.
type serving struct {
	bg  background
	srv *http.Server // nil until serve
}

// serve serves ln with srv in a tracked goroutine; a Serve that fails tells failed.
func (s *serving) serve(ctx context.Context, srv *http.Server, ln net.Listener, failed chan<- error) {
	ctx = s.bg.context(ctx)
	s.srv = srv
	srv.ReadHeaderTimeout = 10 * time.Second
	srv.BaseContext = func(net.Listener) context.Context { return ctx }
	s.bg.wg.Go(func() {
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			select { // the first failure stops the daemon; a second has no one to tell
			case failed <- fmt.Errorf("api server: %w", err): // exit non-zero so a supervisor restarts us
			default:
			}
		}
	})
}

// stop ends the requests' context, shuts the server down within ctx, and waits for Serve.
func (s *serving) stop(ctx context.Context) error {
	if s.srv == nil {
		return nil
	}
	s.bg.cancel()
	err := s.srv.Shutdown(ctx)
	if err != nil {
		s.srv.Close() // requests still running past the deadline: cut them off
	}
	s.bg.stop()
	return err
}
