package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// SocketEnv names the environment variable that overrides the default socket path.
const SocketEnv = "AGENTD_SOCKET"

// DefaultSocketPath is where agentd listens unless told otherwise:
// $AGENTD_SOCKET, else $RUNTIME_DIRECTORY/agentd.sock (systemd's RuntimeDirectory=agentd,
// which is /run/agentd or $XDG_RUNTIME_DIR/agentd, where agentctl looks too), else
// $XDG_RUNTIME_DIR/agentd/agentd.sock, else /run/agentd/agentd.sock for root, else
// $TMPDIR/agentd-UID/agentd.sock.
func DefaultSocketPath() string {
	if p := os.Getenv(SocketEnv); p != "" {
		return p
	}
	if d, _, _ := strings.Cut(os.Getenv("RUNTIME_DIRECTORY"), ":"); d != "" {
		return filepath.Join(d, "agentd.sock")
	}
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" {
		return filepath.Join(d, "agentd", "agentd.sock")
	}
	if os.Getuid() == 0 {
		return "/run/agentd/agentd.sock"
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("agentd-%d", os.Getuid()), "agentd.sock")
}

// Client talks to agentd over its unix socket. The zero value uses DefaultSocketPath.
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

func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	resp, err := c.send(ctx, method, path, in)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		io.Copy(io.Discard, resp.Body)
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("client: decoding %s %s: %w", method, path, err)
	}
	return nil
}

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
			e.Error = strings.TrimSpace(string(b))
			if e.Error == "" {
				e.Error = resp.Status
			}
		}
		return nil, &APIError{Status: resp.StatusCode, Message: e.Error}
	}
	return resp, nil
}

func agentPath(agent string, rest string) string {
	return "/v0/agents/" + url.PathEscape(agent) + rest
}

// Audit lists audit log entries, oldest first.
func (c *Client) Audit(ctx context.Context, q AuditQuery) ([]AuditEntry, error) {
	v := url.Values{}
	if q.Agent != "" {
		v.Set("agent", q.Agent)
	}
	if !q.Since.IsZero() {
		v.Set("since", q.Since.UTC().Format(time.RFC3339Nano))
	}
	if q.Limit != 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	path := "/v0/audit"
	if len(v) > 0 {
		path += "?" + v.Encode()
	}
	var out []AuditEntry
	return out, c.do(ctx, "GET", path, nil, &out)
}

// Replay returns a run step by step; ref is a run id, or an agent for its latest run.
func (c *Client) Replay(ctx context.Context, ref string) (*Replay, error) {
	var r Replay
	return &r, c.do(ctx, "GET", "/v0/runs/"+url.PathEscape(ref)+"/replay", nil, &r)
}

// Doctor runs the daemon's health checks: the model server and model, the store, disk
// space, and every configured integration.
func (c *Client) Doctor(ctx context.Context) (*DoctorReport, error) {
	var r DoctorReport
	return &r, c.do(ctx, "GET", "/v0/doctor", nil, &r)
}

// Reload makes agentd re-read its config file and apply what can change while it runs.
// A bad file is refused (ErrConflict, every problem listed) and the old config stays.
func (c *Client) Reload(ctx context.Context) (*ReloadResult, error) {
	var r ReloadResult
	return &r, c.do(ctx, "POST", "/v0/reload", nil, &r)
}

// Status returns the daemon's status.
func (c *Client) Status(ctx context.Context) (*Status, error) {
	var s Status
	return &s, c.do(ctx, "GET", "/v0/status", nil, &s)
}

// Agents lists all agents, oldest first.
func (c *Client) Agents(ctx context.Context) ([]Agent, error) {
	// Not `return a, c.do(…, &a)`: Go leaves unspecified whether a is read before the call.
	var a []Agent
	err := c.do(ctx, "GET", "/v0/agents", nil, &a)
	return a, err
}

// CreateAgent creates an agent (and starts its run unless req.Start is false).
func (c *Client) CreateAgent(ctx context.Context, req CreateAgentRequest) (*Agent, error) {
	var a Agent
	return &a, c.do(ctx, "POST", "/v0/agents", req, &a)
}

// Agent returns one agent by id or unique name.
func (c *Client) Agent(ctx context.Context, agent string) (*Agent, error) {
	var a Agent
	return &a, c.do(ctx, "GET", agentPath(agent, ""), nil, &a)
}

// DeleteAgent stops and removes an agent and its history.
func (c *Client) DeleteAgent(ctx context.Context, agent string) error {
	return c.do(ctx, "DELETE", agentPath(agent, ""), nil, nil)
}

// Decide records a decision on the agent's current proposal.
func (c *Client) Decide(ctx context.Context, agent string, req DecideRequest) (*Decision, error) {
	var d Decision
	return &d, c.do(ctx, "POST", agentPath(agent, "/decision"), req, &d)
}

// Answer answers the agent's pending question.
func (c *Client) Answer(ctx context.Context, agent string, req AnswerRequest) error {
	return c.do(ctx, "POST", agentPath(agent, "/answer"), req, nil)
}

// Task gives an idle agent a follow-up task.
func (c *Client) Task(ctx context.Context, agent string, task string) (*Agent, error) {
	return c.TaskRun(ctx, agent, TaskRequest{Task: task})
}

// TaskRun gives an idle agent a follow-up task, with a budget for the run it starts.
func (c *Client) TaskRun(ctx context.Context, agent string, req TaskRequest) (*Agent, error) {
	var a Agent
	return &a, c.do(ctx, "POST", agentPath(agent, "/task"), req, &a)
}

// SetBudget changes an agent's own budget over all its runs; an agent paused by its
// budget goes on when the new one allows.
func (c *Client) SetBudget(ctx context.Context, agent string, req BudgetRequest) (*Agent, error) {
	var a Agent
	return &a, c.do(ctx, "POST", agentPath(agent, "/budget"), req, &a)
}

// Pause pauses an agent after its current step.
func (c *Client) Pause(ctx context.Context, agent string) (*Agent, error) {
	var a Agent
	return &a, c.do(ctx, "POST", agentPath(agent, "/pause"), nil, &a)
}

// Resume resumes a paused (or failed) agent.
func (c *Client) Resume(ctx context.Context, agent string) (*Agent, error) {
	var a Agent
	return &a, c.do(ctx, "POST", agentPath(agent, "/resume"), nil, &a)
}

// Stop ends the agent's current run; the agent stays, idle.
func (c *Client) Stop(ctx context.Context, agent string) (*Agent, error) {
	var a Agent
	return &a, c.do(ctx, "POST", agentPath(agent, "/stop"), nil, &a)
}

// History returns the agent's episodes, oldest first.
func (c *Client) History(ctx context.Context, agent string) ([]Episode, error) {
	var e []Episode
	err := c.do(ctx, "GET", agentPath(agent, "/history"), nil, &e)
	return e, err
}

// Commands lists the commands the agent may use now, with class, effective policy and the
// patterns that can decide them. With agent "" it lists what a new agent gets.
func (c *Client) Commands(ctx context.Context, agent string) ([]CommandInfo, error) {
	var out []CommandInfo
	path := "/v0/commands"
	if agent != "" {
		path = agentPath(agent, "/commands")
	}
	err := c.do(ctx, "GET", path, nil, &out)
	return out, err
}

// Policy returns every permission pattern that applies to the agent.
func (c *Client) Policy(ctx context.Context, agent string) (*PolicyView, error) {
	var v PolicyView
	return &v, c.do(ctx, "GET", agentPath(agent, "/policy"), nil, &v)
}

// AddPermission stores an allow or deny pattern for the agent.
func (c *Client) AddPermission(ctx context.Context, agent string, req PermissionRequest) (*PolicyView, error) {
	var v PolicyView
	return &v, c.do(ctx, "POST", agentPath(agent, "/policy"), req, &v)
}

// RemovePermission deletes a stored pattern of the agent.
func (c *Client) RemovePermission(ctx context.Context, agent string, req PermissionRequest) (*PolicyView, error) {
	var v PolicyView
	return &v, c.do(ctx, "DELETE", agentPath(agent, "/policy"), req, &v)
}

// TestPolicy says how the agent's permission patterns would decide a proposal, and why.
func (c *Client) TestPolicy(ctx context.Context, agent string, req PolicyTestRequest) (*PolicyTest, error) {
	var v PolicyTest
	return &v, c.do(ctx, "POST", agentPath(agent, "/policy/test"), req, &v)
}

// Proposals returns the agent's proposals, oldest first.
func (c *Client) Proposals(ctx context.Context, agent string) ([]Proposal, error) {
	var p []Proposal
	err := c.do(ctx, "GET", agentPath(agent, "/proposals"), nil, &p)
	return p, err
}

// Events streams events for one agent (or all agents when agent is "") to fn until ctx ends,
// the stream ends, or fn returns an error. Events after seq since are replayed first when the
// daemon still has them; since 0 replays nothing.
func (c *Client) Events(ctx context.Context, agent string, since int64, fn func(Event) error) error {
	path := "/v0/events"
	if agent != "" {
		path = agentPath(agent, "/events")
	}
	if since > 0 {
		path += "?since=" + strconv.FormatInt(since, 10)
	}
	return c.stream(ctx, path, fn)
}

// stream reads the NDJSON event stream at path into fn.
func (c *Client) stream(ctx context.Context, path string, fn func(Event) error) error {
	resp, err := c.send(ctx, "GET", path, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
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
// Empty text is an error.
func ParseDecision(text string) (DecideRequest, error) {
	t := strings.TrimSpace(text)
	switch strings.ToLower(t) {
	case "":
		return DecideRequest{}, errors.New("empty reply: type y, y -N, y!, n, n! or feedback")
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

func schedulePath(schedule, rest string) string {
	return "/v0/schedules/" + url.PathEscape(schedule) + rest
}

// Schedules lists every schedule by name.
func (c *Client) Schedules(ctx context.Context) ([]Schedule, error) {
	var s []Schedule
	err := c.do(ctx, "GET", "/v0/schedules", nil, &s)
	return s, err
}

// AddSchedule adds a schedule; the reply lists its next fire times.
func (c *Client) AddSchedule(ctx context.Context, req ScheduleRequest) (*Schedule, error) {
	var s Schedule
	return &s, c.do(ctx, "POST", "/v0/schedules", req, &s)
}

// Schedule returns one schedule (by id or name) with its status and next fire times.
func (c *Client) Schedule(ctx context.Context, schedule string) (*Schedule, error) {
	var s Schedule
	return &s, c.do(ctx, "GET", schedulePath(schedule, ""), nil, &s)
}

// RemoveSchedule removes a schedule and its run records; runs in progress go on.
func (c *Client) RemoveSchedule(ctx context.Context, schedule string) error {
	return c.do(ctx, "DELETE", schedulePath(schedule, ""), nil, nil)
}

// PauseSchedule stops a schedule firing until ResumeSchedule.
func (c *Client) PauseSchedule(ctx context.Context, schedule string) (*Schedule, error) {
	var s Schedule
	return &s, c.do(ctx, "POST", schedulePath(schedule, "/pause"), nil, &s)
}

// ResumeSchedule lets a paused schedule fire again, from now on.
func (c *Client) ResumeSchedule(ctx context.Context, schedule string) (*Schedule, error) {
	var s Schedule
	return &s, c.do(ctx, "POST", schedulePath(schedule, "/resume"), nil, &s)
}

// RunSchedule fires a schedule now and returns the firing's record.
func (c *Client) RunSchedule(ctx context.Context, schedule string) (*ScheduleRun, error) {
	var r ScheduleRun
	return &r, c.do(ctx, "POST", schedulePath(schedule, "/run"), nil, &r)
}

// ScheduleHistory returns a schedule's firing records, newest first; limit 0 is all.
func (c *Client) ScheduleHistory(ctx context.Context, schedule string, limit int) ([]ScheduleRun, error) {
	var r []ScheduleRun
	path := schedulePath(schedule, "/history")
	if limit > 0 {
		path += "?limit=" + strconv.Itoa(limit)
	}
	err := c.do(ctx, "GET", path, nil, &r)
	return r, err
}
