package agentprotocol

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/daemon/localapi"
	"github.com/agentd/agentd/internal/display"
)

// Agents is what the Agent Protocol calls of the daemon's agent service: a task is a run
// of a new agent, a step a decision on its proposal, an artifact a file of its replay.
type Agents interface {
	ListAgents(ctx context.Context, q api.AgentQuery, p api.Page) (*api.AgentList, error)
	Agent(ctx context.Context, ref string) (*api.Agent, error)
	CreateAgent(ctx context.Context, req api.CreateAgentRequest) (*api.Agent, error)
	Resume(ctx context.Context, ref string) (*api.Agent, error)
	Decide(ctx context.Context, ref string, req api.DecideRequest) (*api.Decision, error)
	Answer(ctx context.Context, ref string, req api.AnswerRequest) error
	Commands(ctx context.Context, ref string) ([]api.CommandInfo, error)
	Replay(ctx context.Context, ref string) (*api.Replay, error)
}

// Options configure the handler.
type Options struct {
	// Agents is the part of the daemon's agent service (api.AgentService) a task's steps
	// call. Required.
	Agents Agents
	// Log gets 500s and refused uploads; nil discards.
	Log *slog.Logger
	// StepWait bounds how long executing a step waits for the agent to settle, before
	// and after deciding; 0 means 5 minutes (a CPU model can take that long per step).
	StepWait time.Duration
	// MaxUpload caps an uploaded artifact in bytes; 0 means 64 MiB.
	MaxUpload int64
}

// Defaults of Options.
const (
	DefaultStepWait  = 5 * time.Minute
	DefaultMaxUpload = 64 << 20
	maxPageSize      = 100
	// By is who the daemon records as the decider of a step's decision.
	By = "agent-protocol"
)

type handler struct {
	svc       Agents
	log       *slog.Logger
	stepWait  time.Duration
	maxUpload int64
	mux       *http.ServeMux
	uploadsMu sync.Mutex // serializes the uploads sidecar's read-modify-write
	// shown holds the proposals a reply has shown, by id, each with its Ref as shown: an
	// empty-input step approves only those, and only while their Ref is still that one.
	// In memory: after a restart a pending proposal is shown once more first.
	shown sync.Map
}

// New returns the Agent Protocol handler, serving paths under /ap/v1/.
func New(opt Options) http.Handler {
	h := &handler{svc: opt.Agents, log: opt.Log, stepWait: opt.StepWait, maxUpload: opt.MaxUpload, mux: http.NewServeMux()}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	if h.stepWait <= 0 {
		h.stepWait = DefaultStepWait
	}
	if h.maxUpload <= 0 {
		h.maxUpload = DefaultMaxUpload
	}
	const tasks = "/ap/v1/agent/tasks"
	routes := []localapi.Route{
		{Method: "POST", Path: tasks, Fn: h.createTask},
		{Method: "GET", Path: tasks, Fn: h.listTasks},
		{Method: "GET", Path: tasks + "/{task_id}", Fn: h.getTask},
		{Method: "GET", Path: tasks + "/{task_id}/steps", Fn: h.listSteps},
		{Method: "POST", Path: tasks + "/{task_id}/steps", Fn: h.executeStep},
		{Method: "GET", Path: tasks + "/{task_id}/steps/{step_id}", Fn: h.getStep},
		{Method: "GET", Path: tasks + "/{task_id}/artifacts", Fn: h.listArtifacts},
		{Method: "POST", Path: tasks + "/{task_id}/artifacts", Fn: h.uploadArtifact},
		{Method: "GET", Path: tasks + "/{task_id}/artifacts/{artifact_id}", Fn: h.downloadArtifact},
	}
	localapi.Mount(h.mux, routes, h.wrap, func(status int, format string, args ...any) error {
		return errorf(status, format, args...)
	})
	return h
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

// errorf is an error with the HTTP status to reply with, the local API's kind.
var errorf = localapi.Errorf

// wrap turns a handler's error (or panic) into the one error reply.
func (h *handler) wrap(fn func(w http.ResponseWriter, r *http.Request) error) http.Handler {
	return localapi.Wrap(h.log, "agent protocol", h.writeError, fn)
}

// statusOf maps the service's errors: the daemon refusing a value is 422, the protocol's
// status for a request it cannot process.
func statusOf(err error) int {
	var e *localapi.Error
	if errors.Is(err, api.ErrBadRequest) && !errors.As(err, &e) {
		return http.StatusUnprocessableEntity
	}
	return localapi.StatusOf(err)
}

func (h *handler) writeError(w http.ResponseWriter, r *http.Request, err error) {
	status := statusOf(err)
	if status == http.StatusInternalServerError && r.Context().Err() == nil {
		h.log.Error("agent protocol: request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	msg := shown(err.Error()) // it may quote what the model wrote
	localapi.Reply(w, status, map[string]string{"error": msg, "message": msg})
}

// shown is a string of a reply as a client shows it to a person: on one line, with
// control, bidi and zero-width characters escaped (display.Escape). Every string field
// a person reads goes through it — a step's output line by line, names, inputs, reasons,
// errors; additional_output is data, kept as it is.
func shown(s string) string { return display.Escape(s, display.Line) }

// pageParams reads current_page and page_size.
func pageParams(r *http.Request) (cur, size int, err error) {
	num := func(name string, def, max int) (int, error) {
		s := r.URL.Query().Get(name)
		if s == "" {
			return def, nil
		}
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return 0, errorf(http.StatusBadRequest, "%s %q: want a whole number of at least 1", name, s)
		}
		if max > 0 && n > max {
			return 0, errorf(http.StatusBadRequest, "%s %d: at most %d", name, n, max)
		}
		return n, nil
	}
	if cur, err = num("current_page", 1, 0); err != nil {
		return 0, 0, err
	}
	size, err = num("page_size", 10, maxPageSize)
	return cur, size, err
}

// paginate returns the bounds of the page in a list of n items.
func paginate(n, cur, size int) (lo, hi int, p Pagination) {
	p = Pagination{TotalItems: n, TotalPages: (n + size - 1) / size, CurrentPage: cur, PageSize: size}
	lo = min((cur-1)*size, n)
	hi = min(lo+size, n)
	return lo, hi, p
}

// createTask creates an agent with the input as its task and starts its run.
func (h *handler) createTask(w http.ResponseWriter, r *http.Request) error {
	var req TaskRequest
	if err := localapi.DecodeBody(w, r, &req, true); err != nil {
		return err
	}
	if req.Input == nil || strings.TrimSpace(*req.Input) == "" {
		return errorf(http.StatusUnprocessableEntity, "input is empty: say what the agent should do")
	}
	cr := api.CreateAgentRequest{Task: *req.Input}
	if v, ok := req.AdditionalInput["name"]; ok {
		s, ok := v.(string)
		if !ok {
			return errorf(http.StatusUnprocessableEntity, "additional_input.name: want a string, got %v", v)
		}
		cr.Name = s
	}
	if v, ok := req.AdditionalInput["policy"]; ok {
		s, ok := v.(string)
		if !ok {
			return errorf(http.StatusUnprocessableEntity, "additional_input.policy: want ask, auto or continuous, got %v", v)
		}
		cr.Policy = &api.Policy{Mode: s}
	}
	a, err := h.svc.CreateAgent(r.Context(), cr)
	if err != nil {
		return err
	}
	h.log.Info("agent protocol: task created", "task", a.RunID, "agent", a.Name)
	return localapi.Reply(w, http.StatusOK, Task{TaskID: a.RunID, Input: shown(a.Task), AdditionalInput: agentInfo(a, nil), Artifacts: []Artifact{}})
}

// agentInfo is a task's additional_input: who works on it and how it stands.
func agentInfo(a *api.Agent, run *api.Run) map[string]any {
	m := map[string]any{}
	if a != nil {
		m["agent"], m["agent_id"] = a.Name, a.ID
		if run == nil || a.RunID == run.ID {
			m["state"] = string(a.State)
			if a.StateReason != "" {
				m["state_reason"] = shown(a.StateReason)
			}
		}
	}
	if run != nil && run.Outcome != "" {
		m["outcome"] = run.Outcome
		if run.Reason != "" {
			m["reason"] = shown(run.Reason) // a finish message is the model's
		}
	}
	return m
}

// listTasks lists each agent's current or last run, oldest agent first.
func (h *handler) listTasks(w http.ResponseWriter, r *http.Request) error {
	cur, size, err := pageParams(r)
	if err != nil {
		return err
	}
	list, err := h.svc.ListAgents(r.Context(), api.AgentQuery{Brief: true}, api.Page{})
	if err != nil {
		return err
	}
	agents := slices.DeleteFunc(list.Agents, func(a api.Agent) bool { return a.RunID == "" })
	slices.SortStableFunc(agents, func(a, b api.Agent) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	lo, hi, p := paginate(len(agents), cur, size)
	out := TaskListResponse{Tasks: []Task{}, Pagination: p}
	for i := lo; i < hi; i++ {
		a := &agents[i]
		arts, err := h.artifacts(a)
		if err != nil {
			return err
		}
		out.Tasks = append(out.Tasks, Task{TaskID: a.RunID, Input: shown(a.Task), AdditionalInput: agentInfo(a, nil), Artifacts: arts})
	}
	return localapi.Reply(w, http.StatusOK, out)
}

// task finds a task by id: the run's replay and its agent (nil when deleted).
func (h *handler) task(ctx context.Context, id string) (*api.Replay, *api.Agent, error) {
	notFound := errorf(http.StatusNotFound, "no task %q (task ids are run ids, like r-0123456789ab)", id)
	if !strings.HasPrefix(id, "r-") {
		return nil, nil, notFound
	}
	rp, err := h.svc.Replay(ctx, id)
	if errors.Is(err, api.ErrNotFound) {
		return nil, nil, notFound
	} else if err != nil {
		return nil, nil, err
	}
	if rp.Run.ID != id { // Replay also takes agent names
		return nil, nil, notFound
	}
	a, err := h.svc.Agent(ctx, rp.Run.AgentID)
	if errors.Is(err, api.ErrNotFound) {
		return rp, nil, nil
	} else if err != nil {
		return nil, nil, err
	}
	return rp, a, nil
}

func (h *handler) getTask(w http.ResponseWriter, r *http.Request) error {
	rp, a, err := h.task(r.Context(), r.PathValue("task_id"))
	if err != nil {
		return err
	}
	arts, err := h.artifacts(a)
	if err != nil {
		return err
	}
	return localapi.Reply(w, http.StatusOK, Task{TaskID: rp.Run.ID, Input: shown(rp.Run.Task), AdditionalInput: agentInfo(a, &rp.Run), Artifacts: arts})
}
