package api

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// SocketEnv names the environment variable that overrides the default socket path.
const SocketEnv = "AGENTD_SOCKET"

// DefaultSocketPath is where agentd listens unless told otherwise:
// $AGENTD_SOCKET, else $RUNTIME_DIRECTORY/agentd.sock (systemd's RuntimeDirectory=agentd,
// which is /run/agentd or $XDG_RUNTIME_DIR/agentd, where agentctl looks too), else
// $XDG_RUNTIME_DIR/agentd/agentd.sock, else /run/agentd/agentd.sock for root, else
// $TMPDIR/agentd-UID/agentd.sock: the first of SocketPlaces.
func DefaultSocketPath() string { return SocketPlaces()[0].Path }

// Client talks to agentd over its unix socket. The zero value uses DefaultSocketPath.
// Each call is its route's Do on the client, typed by the route's row:
// api.PauseRoute.Do(ctx, c, "bob", api.None{}), api.AddScheduleRoute.Do(ctx, c, "", req);
// its own methods are the calls a route alone does not make (the agent list read as it
// comes, the event streams).
type Client struct {
	// Socket overrides the socket path.
	Socket string
	// HTTP overrides the transport (tests); when set, Socket is ignored.
	HTTP *http.Client

	once sync.Once
	hc   *http.Client
}

func (c *Client) socket() string {
	if c.Socket != "" {
		return c.Socket
	}
	return DefaultSocketPath()
}

func (c *Client) http() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	c.once.Do(func() {
		sock := c.socket()
		c.hc = &http.Client{Transport: &http.Transport{
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, "unix", sock)
			},
		}}
	})
	return c.hc
}

// APIError is a non-2xx reply from the daemon.
type APIError struct {
	Status  int    // HTTP status code
	Message string // the daemon's explanation
}

func (e *APIError) Error() string { return e.Message }

// Is lets errors.Is match the sentinel errors below by status code.
func (e *APIError) Is(target error) bool {
	switch target {
	case ErrNotFound:
		return e.Status == http.StatusNotFound
	case ErrConflict:
		return e.Status == http.StatusConflict
	case ErrBadRequest:
		return e.Status == http.StatusBadRequest
	case ErrForbidden:
		return e.Status == http.StatusForbidden
	}
	return false
}

// Sentinel errors matched by *APIError's status code.
var (
	ErrNotFound   = errors.New("not found")
	ErrConflict   = errors.New("conflict")
	ErrBadRequest = errors.New("bad request")
	ErrForbidden  = errors.New("forbidden")
)

// StatusOf is the HTTP status the daemon replies with for err: the status of an error of
// a kind above (the inverse of APIError.Is), else 500.
func StatusOf(err error) int {
	switch {
	case errors.Is(err, ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, ErrConflict):
		return http.StatusConflict
	case errors.Is(err, ErrBadRequest):
		return http.StatusBadRequest
	case errors.Is(err, ErrForbidden):
		return http.StatusForbidden
	}
	return http.StatusInternalServerError
}

// Error is an error of one of the kinds above (ErrNotFound, ErrConflict, ...) whose
// message is meant for people as it is. The daemon returns these; the API maps Kind to
// the status code.
type Error struct {
	Kind error
	Msg  string
}

func (e *Error) Error() string { return e.Msg }

// Unwrap returns the kind, so errors.Is(err, ErrConflict) works.
func (e *Error) Unwrap() error { return e.Kind }

// Errorf returns an *Error of the given kind.
func Errorf(kind error, format string, args ...any) error {
	return &Error{Kind: kind, Msg: fmt.Sprintf(format, args...)}
}

// DaemonNotRunningError says the socket could not be reached.
type DaemonNotRunningError struct {
	Socket string
	Err    error
}

func (e *DaemonNotRunningError) Error() string {
	return fmt.Sprintf("agentd is not running (no daemon at %s): start it with `agentd` or `systemctl --user start agentd`", e.Socket)
}

func (e *DaemonNotRunningError) Unwrap() error { return e.Err }

func (c *Client) send(ctx context.Context, method, path string, in any) (*http.Response, error) {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return nil, err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://local"+path, body)
	if err != nil {
		return nil, err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http().Do(req)
	if err != nil {
		if c.HTTP == nil && (errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED)) {
			return nil, &DaemonNotRunningError{Socket: c.socket(), Err: err}
		}
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		var e ErrorResponse
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		if json.Unmarshal(b, &e) != nil || e.Error == "" {
			e.Error = cmp.Or(strings.TrimSpace(string(b)), resp.Status)
		}
		return nil, &APIError{Status: resp.StatusCode, Message: e.Error}
	}
	return resp, nil
}

// EachAgent calls fn with each agent, oldest first, as the daemon's reply is read: a long
// list is never held whole. It stops at fn's first error and returns it.
func (c *Client) EachAgent(ctx context.Context, q AgentQuery, fn func(Agent) error) error {
	_, err := list(ctx, c, AgentsRoute, q, Page{}, fn)
	return err
}

// Commands lists the commands the agent may use now, with class, effective policy and the
// patterns that can decide them. With agent "" it lists what a new agent gets.
func (c *Client) Commands(ctx context.Context, agent string) ([]CommandInfo, error) {
	if agent == "" {
		return CommandsRoute.Do(ctx, c, "", None{})
	}
	return AgentCommandsRoute.Do(ctx, c, agent, None{})
}

// EventsOpened streams events for one agent (or all agents when agent is "") to fn until
// ctx ends, the stream ends, or fn returns an error, calling opened (when not nil) once
// the daemon has subscribed, before the first event. Events after seq since are replayed
// first when the daemon still has them; since 0 replays nothing, so a caller that read
// the agent before subscribing reads it again in opened, or misses what happened in between.
func (c *Client) EventsOpened(ctx context.Context, agent string, since int64, opened func() error, fn func(Event) error) error {
	if agent == "" {
		return c.stream(ctx, EventsRoute.URL("", since), opened, fn)
	}
	return c.stream(ctx, AgentEventsRoute.URL(agent, since), opened, fn)
}

// TeamEvents streams a team run's transcript into fn: the entries after the one whose Seq
// is since (0: all of it), then each new one as it is written, until the run ends (the
// last event is the TurnEnd entry) or ctx does. A stream that ends without the end (the
// daemon stopped, the follower fell behind) returns nil: call again with the last Seq seen.
func (c *Client) TeamEvents(ctx context.Context, team string, since int, fn func(Event) error) error {
	return c.stream(ctx, TeamEventsRoute.URL(team, int64(since)), nil, fn)
}

// stream reads the NDJSON event stream at path into fn, after opened (may be nil): the
// daemon sends the headers once it has subscribed.
func (c *Client) stream(ctx context.Context, path string, opened func() error, fn func(Event) error) error {
	resp, err := c.send(ctx, "GET", path, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if opened != nil {
		if err := opened(); err != nil {
			return err
		}
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var ev Event
		if err := json.Unmarshal(line, &ev); err != nil {
			return fmt.Errorf("client: bad event line: %w", err)
		}
		if err := fn(ev); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil && ctx.Err() == nil {
		return err
	}
	return ctx.Err()
}

// ParseDecision turns what a person typed into a decision, the same way in every front end:
// "y" approves, "y -N" approves this and the next N-1, "n" denies, anything else is feedback.
// Empty text is an error; "?", "help" and "h" are ErrHelp (never feedback: see IsHelp).
func ParseDecision(text string) (DecideRequest, error) {
	t := strings.TrimSpace(text)
	if IsHelp(t) {
		return DecideRequest{}, ErrHelp
	}
	switch strings.ToLower(t) {
	case "":
		return DecideRequest{}, errors.New("empty reply: type y, y -N, y!, n, n! or feedback (? for help)")
	case "y", "yes":
		return DecideRequest{Kind: DecisionApprove, Count: 1}, nil
	case "n", "no":
		return DecideRequest{Kind: DecisionDeny}, nil
	case "y!", "a", "always":
		return DecideRequest{Kind: DecisionApprove, Count: 1, Scope: ScopeAgent}, nil
	case "n!", "never":
		return DecideRequest{Kind: DecisionDeny, Scope: ScopeDeny}, nil
	}
	if f := strings.Fields(t); len(f) == 2 && strings.EqualFold(f[0], "y") && strings.HasPrefix(f[1], "-") {
		n, err := strconv.Atoi(f[1][1:])
		if err != nil || n < 1 {
			return DecideRequest{}, fmt.Errorf("%q: want y -N with N a whole number of at least 1", t)
		}
		return DecideRequest{Kind: DecisionApprove, Count: n}, nil
	}
	return DecideRequest{Kind: DecisionFeedback, Feedback: t}, nil
}
