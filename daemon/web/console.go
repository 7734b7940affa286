package web

import (
	"context"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/daemon/localapi"
)

// Service is the part of the daemon's API the console uses: the same one agentctl calls
// over the socket, served in-process.
type Service interface {
	Status(ctx context.Context) (*api.Status, error)
	ListAgents(ctx context.Context, q api.AgentQuery, p api.Page) (*api.AgentList, error)
	Agent(ctx context.Context, ref string) (*api.Agent, error)
	History(ctx context.Context, ref string) ([]api.Episode, error)
	Subscribe(ref string, since int64) (events <-chan api.Event, cancel func(), err error)
	Decide(ctx context.Context, ref string, req api.DecideRequest) (*api.Decision, error)
	Answer(ctx context.Context, ref string, req api.AnswerRequest) error
	Rewind(ctx context.Context, ref string, req api.RewindRequest) (*api.Rewind, error)
	Schedules(ctx context.Context) ([]api.Schedule, error)
	Schedule(ctx context.Context, ref string) (*api.Schedule, error)
	AddSchedule(ctx context.Context, req api.ScheduleRequest) (*api.Schedule, error)
	PauseSchedule(ctx context.Context, ref string) (*api.Schedule, error)
	ResumeSchedule(ctx context.Context, ref string) (*api.Schedule, error)
	SearchMemory(ctx context.Context, req api.MemorySearchRequest) ([]api.Memory, error)
	Teams(ctx context.Context) ([]api.TeamRun, error)
	Audit(ctx context.Context, q api.AuditQuery) ([]api.AuditEntry, error)
	Replay(ctx context.Context, ref string) (*api.Replay, error)
	Doctor(ctx context.Context) (*api.DoctorReport, error)
}

// Options configure a Console.
type Options struct {
	Service Service
	Log     *slog.Logger
	// User is who decisions made here are recorded as (the daemon's user); "" is "web".
	User string
	// Now is the clock for tokens and sessions; nil is time.Now.
	Now func() time.Time
	// CheckWhen checks the form of a schedule's wake conditions as the schedules do and
	// returns them in agentctl's words, for the form's check as it is typed; nil leaves
	// them to be checked when the form is sent.
	CheckWhen func(api.WakeConditions) (string, error)
}

// Console is the web console. It serves nothing until Listen; Close stops it.
type Console struct {
	svc Service
	log *slog.Logger
	// checkWhenForm is Options.CheckWhen.
	checkWhenForm func(api.WakeConditions) (string, error)
	user          string
	auth          *auth
	pages         map[string]*template.Template
	// router serves logged-in requests (handler.go's mux).
	router *http.ServeMux
	// latest is the newest event seq the console has seen; pages carry it so their event
	// stream starts right after what they show.
	latest atomic.Int64
	// streams counts the event streams open now.
	streams atomic.Int64

	mu     sync.Mutex // guards the fields below: Listen and Close may race
	ln     net.Listener
	srv    *http.Server
	guard  localapi.HostGuard
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// New returns a console over opt.Service.
func New(opt Options) (*Console, error) {
	if opt.Service == nil {
		return nil, errors.New("web console: no Service")
	}
	if opt.Log == nil {
		opt.Log = slog.New(slog.DiscardHandler)
	}
	if opt.User == "" {
		opt.User = "web"
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	pages, err := parsePages()
	if err != nil {
		return nil, err
	}
	c := &Console{svc: opt.Service, log: opt.Log, user: opt.User, auth: newAuth(opt.Now), pages: pages, checkWhenForm: opt.CheckWhen}
	c.router = c.mux()
	return c, nil
}

// Listen binds addr (a loopback host:port; port 0 picks one) and serves the console
// until ctx ends or Close. A console already listening keeps its address. It returns
// the console's base URL, like "http://127.0.0.1:7077/".
func (c *Console) Listen(ctx context.Context, addr string) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ln != nil {
		return c.baseLocked(), nil
	}
	ln, err := listenLoopback(addr)
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithCancel(ctx)
	c.ln, c.cancel = ln, cancel
	c.guard = localapi.NewHostGuard(ln.Addr(), addr)
	c.guard.Name = "the web console"
	c.guard.Reach = "http://127.0.0.1:" + c.guard.Port() + "/ (the URL `agentctl web` prints)"
	srv := &http.Server{Handler: c, ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return ctx }}
	c.srv = srv
	c.wg.Go(func() {
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			c.log.Error("web console: stopped serving", "err", err)
		}
	})
	c.wg.Go(func() { c.track(ctx) })
	c.log.Info("web console listening", "url", c.baseLocked())
	return c.baseLocked(), nil
}

// listenLoopback binds addr, refusing any address that is not loopback: the console
// decides what agents run, and has no TLS.
func listenLoopback(addr string) (net.Listener, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("web console: %q is not host:port, like 127.0.0.1:7077", addr)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("web console: %q is not a loopback IP: the console binds 127.0.0.1 or ::1 only", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("web console: %w (pick another port in [web_console] listen)", err)
	}
	return ln, nil
}

func (c *Console) baseLocked() string {
	return "http://" + c.ln.Addr().String() + "/"
}

// URL is the console's base URL, or "" when it is not listening.
func (c *Console) URL() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ln == nil {
		return ""
	}
	return c.baseLocked()
}

// LoginURL mints a one-time login token and returns the URL that spends it, or an
// error when the console is not listening.
func (c *Console) LoginURL() (string, error) {
	base := c.URL()
	if base == "" {
		return "", errors.New("web console is not listening: run `agentctl web` or set [web_console] enabled = true")
	}
	return base + "login?token=" + c.auth.newLogin(), nil
}

// EndSessions logs every browser out and spends every login URL not used yet: their
// pages and event streams stop at once. It returns how many sessions it ended.
func (c *Console) EndSessions() int {
	n := c.auth.endAll()
	c.log.Info("web console: every session ended", "sessions", n)
	return n
}

// Close stops serving: requests in flight get ctx's time to finish; event streams end.
func (c *Console) Close(ctx context.Context) error {
	c.mu.Lock()
	srv, cancel := c.srv, c.cancel
	c.ln, c.srv, c.cancel = nil, nil, nil // a later Listen binds afresh
	c.mu.Unlock()
	if srv == nil {
		return nil
	}
	cancel() // ends the event streams, which would hold Shutdown up
	err := srv.Shutdown(ctx)
	if err != nil {
		srv.Close()
	}
	c.wg.Wait()
	return err
}

// track follows every agent's events to know the newest seq; a page starts its stream
// after it. Falling behind closes the channel: subscribe again from the last seq seen.
func (c *Console) track(ctx context.Context) {
	for ctx.Err() == nil {
		ch, cancel, err := c.svc.Subscribe("", c.latest.Load())
		if err != nil {
			c.log.Warn("web console: cannot follow events", "err", err)
			return
		}
		func() {
			defer cancel()
			for {
				select {
				case <-ctx.Done():
					return
				case ev, ok := <-ch:
					if !ok {
						return
					}
					c.latest.Store(ev.Seq)
				}
			}
		}()
	}
}
