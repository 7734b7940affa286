package mcp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/internal/backoff"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// defaultBackoff is the wait between restarts of a server: 1s, doubling up to 1m. A
// server that stayed up at least the longest wait starts again from the first.
var defaultBackoff = backoff.Policy{Base: time.Second, Max: time.Minute}

// pingTimeout bounds the liveness check made after a call failed in transport.
const pingTimeout = 5 * time.Second

// Bridge connects to the configured MCP servers and offers their tools as commands.
//
// Lifecycle: New checks the configs; Start connects to every server and keeps them
// running (restarting with backoff) until its context ends or Close is called; Commands,
// Lookup, Status and Changed may be used at any time, from any goroutine.
type Bridge struct {
	servers []*server
	log     *slog.Logger
	backoff backoff.Policy
	// dial makes the transport for one connection attempt; tests swap in in-memory ones.
	dial func(cfg ServerConfig, stderr io.Writer) (mcp.Transport, error)

	mu      sync.Mutex
	changed chan struct{}
	started bool
	closed  bool
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

// server is the bridge's view of one configured server.
type server struct {
	cfg    ServerConfig
	stderr *tailWriter
	kick   chan struct{} // a call failed in transport: check the connection now

	mu      sync.Mutex
	session *mcp.ClientSession // nil while the server is down
	tools   []*toolCommand     // as last listed; kept while the server is down
	lastErr string
}

// New checks cfgs and returns a bridge that is not connected yet. All config errors are
// reported together, each naming its server.
func New(cfgs []ServerConfig, log *slog.Logger) (*Bridge, error) {
	if err := validateAll(cfgs); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	b := &Bridge{log: log, backoff: defaultBackoff, dial: dialServer, changed: make(chan struct{})}
	for _, c := range cfgs {
		c.Command = append([]string(nil), c.Command...)
		b.servers = append(b.servers, &server{
			cfg:    c,
			stderr: &tailWriter{log: log.With("mcp_server", c.Name)},
			kick:   make(chan struct{}, 1),
		})
	}
	return b, nil
}

// Start connects to every server and returns once each has either listed its tools or
// failed its first attempt (bounded by its Timeout); servers that failed keep being retried
// in the background. Start does nothing after the first call or after Close.
func (b *Bridge) Start(ctx context.Context) {
	b.mu.Lock()
	if b.started || b.closed {
		b.mu.Unlock()
		return
	}
	b.started = true
	ctx, b.cancel = context.WithCancel(ctx)
	b.mu.Unlock()

	ready := make(chan struct{}, len(b.servers))
	for _, s := range b.servers {
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			b.supervise(ctx, s, ready)
		}()
	}
	for range b.servers {
		select {
		case <-ready:
		case <-ctx.Done():
			return
		}
	}
}

// Close disconnects from every server, stops the stdio ones and waits for that to finish.
func (b *Bridge) Close() {
	b.mu.Lock()
	b.closed = true
	cancel := b.cancel
	b.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	b.wg.Wait()
}

// Commands returns one command per usable tool of every server that has listed its tools
// at least once, sorted by name. Commands of a server that is down are included; their
// Available method says false and Execute fails with an *UnavailableError.
func (b *Bridge) Commands() []commands.Command {
	var out []commands.Command
	for _, s := range b.servers {
		s.mu.Lock()
		for _, t := range s.tools {
			out = append(out, t)
		}
		s.mu.Unlock()
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Spec().Name < out[j].Spec().Name })
	return out
}

func (b *Bridge) notify() {
	b.mu.Lock()
	close(b.changed)
	b.changed = make(chan struct{})
	b.mu.Unlock()
}

// ServerStatus is the state of one configured server.
type ServerStatus struct {
	Name  string
	Up    bool
	Tools int    // commands made from its tools
	Error string // why it is down, or why its last start failed; empty when up
}

// Status reports every configured server, in config order.
func (b *Bridge) Status() []ServerStatus {
	out := make([]ServerStatus, len(b.servers))
	for i, s := range b.servers {
		s.mu.Lock()
		out[i] = ServerStatus{Name: s.cfg.Name, Up: s.session != nil, Tools: len(s.tools), Error: s.lastErr}
		s.mu.Unlock()
	}
	return out
}

// supervise keeps one server connected until ctx ends, restarting it with backoff.
func (b *Bridge) supervise(ctx context.Context, s *server, ready chan<- struct{}) {
	log := b.log.With("mcp_server", s.cfg.Name)
	attempt := 1
	for first := true; ; first = false {
		s.stderr.reset()
		sess, tools, err := b.connect(ctx, s, log)
		switch {
		case ctx.Err() != nil:
		case err != nil:
			s.setError(err)
		default:
			s.set(sess, tools, "")
			b.notify()
		}
		if first {
			ready <- struct{}{} // Start returns once the state above is visible
		}
		if ctx.Err() != nil {
			if sess != nil {
				sess.Close()
			}
			return
		}
		delay := b.backoff.Next(attempt)
		if err != nil {
			log.Warn("mcp server did not start; retrying", "in", delay, "error", err, "stderr", s.stderr.tail())
		} else {
			up := time.Now()
			log.Info("mcp server connected", "tools", len(tools))
			why := s.watch(ctx, sess)
			s.set(nil, tools, why.Error())
			b.notify()
			sess.Close()
			if ctx.Err() != nil {
				return
			}
			if time.Since(up) >= b.backoff.Max {
				attempt, delay = 1, b.backoff.Next(1)
			}
			log.Warn("mcp server stopped; restarting", "in", delay, "error", why, "stderr", s.stderr.tail())
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		attempt++
	}
}

// connect starts one session and lists the server's tools, within the server's timeout.
func (b *Bridge) connect(ctx context.Context, s *server, log *slog.Logger) (*mcp.ClientSession, []*toolCommand, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.timeout())
	defer cancel()
	t, err := b.dial(s.cfg, s.stderr)
	if err != nil {
		return nil, nil, err
	}
	opts := &mcp.ClientOptions{}
	if s.cfg.URL != "" {
		// Over HTTP nothing else notices a server that went away between calls. Not for
		// stdio: a server that answers one request at a time would miss pings during a
		// long call and be killed for it; the process exiting is the signal there.
		opts.KeepAlive, opts.KeepAliveFailureThreshold = 30*time.Second, 3
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "agentd", Version: "v0"}, opts)
	sess, err := client.Connect(ctx, t, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("connect: %w", err)
	}
	var tools []*mcp.Tool
	for tool, err := range sess.Tools(ctx, nil) {
		if err != nil {
			sess.Close()
			return nil, nil, fmt.Errorf("list tools: %w", err)
		}
		tools = append(tools, tool)
	}
	return sess, toolCommands(s, tools, log), nil
}

// toolCommands makes the commands for a server's tools, skipping (with a warning) those
// whose name or schema cannot be used.
func toolCommands(s *server, tools []*mcp.Tool, log *slog.Logger) []*toolCommand {
	var out []*toolCommand
	seen := map[string]string{}
	for _, t := range tools {
		name := commandName(s.cfg.Name, t.Name)
		if name == "" {
			log.Warn("mcp tool skipped: its name has no usable characters", "tool", t.Name)
			continue
		}
		if other, dup := seen[name]; dup {
			log.Warn("mcp tool skipped: its command name is taken", "tool", t.Name, "command", name, "taken_by", other)
			continue
		}
		params, dropped, err := convertSchema(t.InputSchema)
		if err != nil {
			log.Warn("mcp tool skipped: its input schema cannot be used", "tool", t.Name, "error", err)
			continue
		}
		for _, d := range dropped {
			log.Warn("mcp tool: left out an argument", "tool", t.Name, "why", d)
		}
		seen[name] = t.Name
		out = append(out, &toolCommand{srv: s, tool: t.Name, spec: commands.Spec{
			Name:        name,
			Description: describe(s.cfg.Name, t),
			Params:      params,
			Class:       commands.ClassExecute,
			Idempotent:  false, // a tool's idempotentHint is the server's claim, not ours to trust
		}})
	}
	return out
}

func describe(server string, t *mcp.Tool) string {
	for _, d := range []string{t.Description, t.Title} {
		if d = oneLine(d, maxDescription); d != "" {
			return d
		}
	}
	if t.Annotations != nil && t.Annotations.Title != "" {
		return oneLine(t.Annotations.Title, maxDescription)
	}
	return oneLine(fmt.Sprintf("tool %s of MCP server %s", t.Name, server), maxDescription)
}

// watch returns why the session ended: the server closed it, a liveness check after a
// failed call found it dead, or ctx ended.
func (s *server) watch(ctx context.Context, sess *mcp.ClientSession) error {
	done := make(chan error, 1)
	go func() { done <- sess.Wait() }()
	for {
		select {
		case err := <-done:
			if err == nil {
				err = errors.New("the server closed the connection")
			}
			return err
		case <-ctx.Done():
			return ctx.Err()
		case <-s.kick:
			pctx, cancel := context.WithTimeout(ctx, min(s.cfg.timeout(), pingTimeout))
			err := sess.Ping(pctx, nil)
			cancel()
			// Any answer, even an error, means the server is there.
			if err != nil && ctx.Err() == nil && serverAnswer(err) == nil {
				return fmt.Errorf("liveness check after a failed call: %w", err)
			}
		}
	}
}

func (s *server) set(sess *mcp.ClientSession, tools []*toolCommand, lastErr string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.session, s.tools, s.lastErr = sess, tools, lastErr
}

func (s *server) setError(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastErr = err.Error()
}

func (s *server) current() *mcp.ClientSession {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.session
}

// check asks the supervisor to verify the connection, without waiting.
func (s *server) check() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// dialServer makes the transport for a config: a child process over stdio, or HTTP.
func dialServer(cfg ServerConfig, stderr io.Writer) (mcp.Transport, error) {
	if cfg.URL != "" {
		return &mcp.StreamableClientTransport{Endpoint: cfg.URL}, nil
	}
	cmd := exec.Command(cfg.Command[0], cfg.Command[1:]...)
	cmd.Env = childEnv(cfg.Env)
	cmd.Stderr = stderr
	cmd.WaitDelay = time.Second // a grandchild holding stderr open must not block Wait
	return &mcp.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}, nil
}

// tailWriter takes a stdio server's stderr: each line is logged at debug level and the
// last few are kept, to explain a server that failed or died.
type tailWriter struct {
	log     *slog.Logger
	mu      sync.Mutex
	partial []byte
	lines   []string
}

const (
	tailLines   = 5
	tailLineMax = 200
)

func (w *tailWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.partial = append(w.partial, p...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			break
		}
		w.add(string(w.partial[:i]))
		w.partial = w.partial[i+1:]
	}
	if len(w.partial) > 4*tailLineMax {
		w.add(string(w.partial))
		w.partial = nil
	}
	return len(p), nil
}

func (w *tailWriter) add(line string) {
	line = oneLine(line, tailLineMax)
	if line == "" {
		return
	}
	w.log.Debug("mcp server stderr", "line", line)
	w.lines = append(w.lines, line)
	if len(w.lines) > tailLines {
		w.lines = w.lines[1:]
	}
}

func (w *tailWriter) tail() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(w.lines, " | ")
}

func (w *tailWriter) reset() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.lines, w.partial = nil, nil
}
