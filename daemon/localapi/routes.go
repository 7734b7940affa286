package localapi

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/agentd/agentd/daemon/client"
)

// maxBody bounds a request body; the largest real one is a feedback text.
const maxBody = 1 << 20

// route is one row of the API: a method, a ServeMux path pattern and its handler.
type route struct {
	method string
	path   string
	fn     handlerFunc
}

// routes is the whole API. Every row has a Client method calling it.
func (h *handler) routes() []route {
	return []route{
		{"GET", "/v0/status", h.status},
		{"GET", "/v0/agents", h.agents},
		{"POST", "/v0/agents", h.createAgent},
		{"GET", "/v0/agents/{agent}", h.agent},
		{"DELETE", "/v0/agents/{agent}", h.deleteAgent},
		{"POST", "/v0/agents/{agent}/decision", h.decide},
		{"POST", "/v0/agents/{agent}/answer", h.answer},
		{"POST", "/v0/agents/{agent}/task", h.task},
		{"POST", "/v0/agents/{agent}/pause", h.agentAction(h.svc.Pause)},
		{"POST", "/v0/agents/{agent}/resume", h.agentAction(h.svc.Resume)},
		{"POST", "/v0/agents/{agent}/stop", h.agentAction(h.svc.Stop)},
		{"POST", "/v0/agents/{agent}/budget", h.budget},
		{"GET", "/v0/agents/{agent}/history", h.history},
		{"GET", "/v0/agents/{agent}/proposals", h.proposals},
		{"GET", "/v0/doctor", h.doctor},
		{"POST", "/v0/reload", h.reload},
		{"GET", "/v0/audit", h.audit},
		{"GET", "/v0/runs/{run}/replay", h.replay},
		{"GET", "/v0/commands", h.commands},
		{"GET", "/v0/agents/{agent}/commands", h.commands},
		{"GET", "/v0/agents/{agent}/policy", h.policy},
		{"POST", "/v0/agents/{agent}/policy", h.permission(h.svc.AddPermission)},
		{"DELETE", "/v0/agents/{agent}/policy", h.permission(h.svc.RemovePermission)},
		{"POST", "/v0/agents/{agent}/policy/test", h.testPolicy},
		{"GET", "/v0/agents/{agent}/events", h.events},
		{"GET", "/v0/memories", h.memories},
		{"POST", "/v0/memories", h.addMemory},
		{"DELETE", "/v0/memories/{id}", h.deleteMemory},
		{"POST", "/v0/memory/search", h.searchMemory},
		{"POST", "/v0/memory/reindex", h.reindexMemory},
		{"GET", "/v0/memory/stats", h.memoryStats},
		{"GET", "/v0/events", h.events},
		{"GET", "/v0/schedules", h.schedules},
		{"POST", "/v0/schedules", h.addSchedule},
		{"GET", "/v0/schedules/{schedule}", h.schedule},
		{"DELETE", "/v0/schedules/{schedule}", h.removeSchedule},
		{"POST", "/v0/schedules/{schedule}/pause", h.scheduleAction(h.svc.PauseSchedule)},
		{"POST", "/v0/schedules/{schedule}/resume", h.scheduleAction(h.svc.ResumeSchedule)},
		{"POST", "/v0/schedules/{schedule}/run", h.runSchedule},
		{"GET", "/v0/schedules/{schedule}/history", h.scheduleHistory},
		{"GET", "/v0/teams", h.teams},
		{"POST", "/v0/teams", h.startTeam},
		{"POST", "/v0/team-plans", h.planTeam},
		{"GET", "/v0/teams/{team}", h.team},
		{"POST", "/v0/teams/{team}/stop", h.stopTeam},
		{"GET", "/v0/teams/{team}/events", h.teamEvents},
	}
}

func (h *handler) status(w http.ResponseWriter, r *http.Request) error {
	st, err := h.svc.Status(r.Context())
	if err != nil {
		return err
	}
	return reply(w, http.StatusOK, st)
}

func (h *handler) agents(w http.ResponseWriter, r *http.Request) error {
	list, err := h.svc.Agents(r.Context())
	if err != nil {
		return err
	}
	return reply(w, http.StatusOK, nonNil(list))
}

func (h *handler) createAgent(w http.ResponseWriter, r *http.Request) error {
	var req client.CreateAgentRequest
	if err := decodeBody(w, r, &req); err != nil {
		return err
	}
	a, err := h.svc.CreateAgent(r.Context(), req)
	if err != nil {
		return err
	}
	return reply(w, http.StatusCreated, a)
}

func (h *handler) agent(w http.ResponseWriter, r *http.Request) error {
	a, err := h.svc.Agent(r.Context(), r.PathValue("agent"))
	if err != nil {
		return err
	}
	return reply(w, http.StatusOK, a)
}

func (h *handler) deleteAgent(w http.ResponseWriter, r *http.Request) error {
	if err := h.svc.DeleteAgent(r.Context(), r.PathValue("agent")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (h *handler) decide(w http.ResponseWriter, r *http.Request) error {
	var req client.DecideRequest
	if err := decodeBody(w, r, &req); err != nil {
		return err
	}
	d, err := h.svc.Decide(r.Context(), r.PathValue("agent"), req)
	if err != nil {
		return err
	}
	return reply(w, http.StatusOK, d)
}

func (h *handler) answer(w http.ResponseWriter, r *http.Request) error {
	var req client.AnswerRequest
	if err := decodeBody(w, r, &req); err != nil {
		return err
	}
	if err := h.svc.Answer(r.Context(), r.PathValue("agent"), req); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (h *handler) task(w http.ResponseWriter, r *http.Request) error {
	var req client.TaskRequest
	if err := decodeBody(w, r, &req); err != nil {
		return err
	}
	a, err := h.svc.TaskRun(r.Context(), r.PathValue("agent"), req)
	if err != nil {
		return err
	}
	return reply(w, http.StatusOK, a)
}

func (h *handler) budget(w http.ResponseWriter, r *http.Request) error {
	var req client.BudgetRequest
	if err := decodeBody(w, r, &req); err != nil {
		return err
	}
	a, err := h.svc.SetBudget(r.Context(), r.PathValue("agent"), req)
	if err != nil {
		return err
	}
	return reply(w, http.StatusOK, a)
}

// agentAction serves the body-less POSTs that change an agent and reply with it.
func (h *handler) agentAction(fn func(ctx context.Context, ref string) (*client.Agent, error)) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		a, err := fn(r.Context(), r.PathValue("agent"))
		if err != nil {
			return err
		}
		return reply(w, http.StatusOK, a)
	}
}

func (h *handler) history(w http.ResponseWriter, r *http.Request) error {
	eps, err := h.svc.History(r.Context(), r.PathValue("agent"))
	if err != nil {
		return err
	}
	return reply(w, http.StatusOK, nonNil(eps))
}

func (h *handler) proposals(w http.ResponseWriter, r *http.Request) error {
	ps, err := h.svc.Proposals(r.Context(), r.PathValue("agent"))
	if err != nil {
		return err
	}
	return reply(w, http.StatusOK, nonNil(ps))
}

// nonNil makes an empty list encode as [] rather than null, so --json output is stable.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// decodeBody reads exactly one JSON object into v: at most maxBody bytes, no unknown
// fields, nothing after it. Each failure names what was wrong.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return bodyError(err)
	}
	if err := dec.Decode(&json.RawMessage{}); !errors.Is(err, io.EOF) {
		if err != nil {
			return bodyError(err)
		}
		return errorf(http.StatusBadRequest, "invalid request body: unexpected data after the JSON object")
	}
	return nil
}

// bodyError explains a decoding failure in the terms of the request.
func bodyError(err error) error {
	var (
		syntax  *json.SyntaxError
		typ     *json.UnmarshalTypeError
		tooBig  *http.MaxBytesError
		badBody = func(format string, args ...any) error {
			return errorf(http.StatusBadRequest, "invalid request body: "+format, args...)
		}
	)
	switch {
	case errors.As(err, &tooBig):
		return errorf(http.StatusRequestEntityTooLarge, "request body larger than %d bytes", tooBig.Limit)
	case errors.Is(err, io.EOF):
		return badBody("empty; want a JSON object")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return badBody("unexpected end of JSON")
	case errors.As(err, &syntax):
		return badBody("%s (at byte %d)", syntax.Error(), syntax.Offset)
	case errors.As(err, &typ) && typ.Field != "":
		return badBody("field %q: want %s, got %s", typ.Field, jsonKind(typ.Type), typ.Value)
	case errors.As(err, &typ):
		return badBody("want a JSON object, got %s", typ.Value)
	}
	return badBody("%s", strings.TrimPrefix(err.Error(), "json: "))
}

// jsonKind names a Go type the way a JSON writer thinks of it.
func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return t.String()
}

func (h *handler) audit(w http.ResponseWriter, r *http.Request) error {
	q := client.AuditQuery{Agent: r.URL.Query().Get("agent")}
	for key := range r.URL.Query() {
		if key != "agent" && key != "since" && key != "limit" {
			return client.Errorf(client.ErrBadRequest, "unknown query parameter %q (want agent, since, limit)", key)
		}
	}
	if v := r.URL.Query().Get("since"); v != "" {
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return client.Errorf(client.ErrBadRequest, "since %q: want an RFC 3339 time like 2026-11-21T09:00:00Z", v)
		}
		q.Since = t
	}
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return client.Errorf(client.ErrBadRequest, "limit %q: want a whole number", v)
		}
		q.Limit = n
	}
	list, err := h.svc.Audit(r.Context(), q)
	if err != nil {
		return err
	}
	return reply(w, http.StatusOK, nonNil(list))
}

func (h *handler) replay(w http.ResponseWriter, r *http.Request) error {
	rep, err := h.svc.Replay(r.Context(), r.PathValue("run"))
	if err != nil {
		return err
	}
	return reply(w, http.StatusOK, rep)
}

func (h *handler) reload(w http.ResponseWriter, r *http.Request) error {
	res, err := h.svc.Reload(r.Context())
	if err != nil {
		return err
	}
	return reply(w, http.StatusOK, res)
}

func (h *handler) doctor(w http.ResponseWriter, r *http.Request) error {
	rep, err := h.svc.Doctor(r.Context())
	if err != nil {
		return err
	}
	return reply(w, http.StatusOK, rep)
}

func (h *handler) commands(w http.ResponseWriter, r *http.Request) error {
	list, err := h.svc.Commands(r.Context(), r.PathValue("agent"))
	if err != nil {
		return err
	}
	return reply(w, http.StatusOK, nonNil(list))
}

func (h *handler) policy(w http.ResponseWriter, r *http.Request) error {
	v, err := h.svc.Policy(r.Context(), r.PathValue("agent"))
	if err != nil {
		return err
	}
	return reply(w, http.StatusOK, v)
}

func (h *handler) testPolicy(w http.ResponseWriter, r *http.Request) error {
	var req client.PolicyTestRequest
	if err := decodeBody(w, r, &req); err != nil {
		return err
	}
	v, err := h.svc.TestPolicy(r.Context(), r.PathValue("agent"), req)
	if err != nil {
		return err
	}
	return reply(w, http.StatusOK, v)
}

// permission serves adding and removing a stored pattern; both reply with the policy.
func (h *handler) permission(fn func(ctx context.Context, ref string, req client.PermissionRequest) (*client.PolicyView, error)) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		var req client.PermissionRequest
		if err := decodeBody(w, r, &req); err != nil {
			return err
		}
		v, err := fn(r.Context(), r.PathValue("agent"), req)
		if err != nil {
			return err
		}
		return reply(w, http.StatusOK, v)
	}
}
