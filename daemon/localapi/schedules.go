package localapi

import (
	"context"
	"net/http"
	"strconv"

	"github.com/agentd/agentd/daemon/client"
)

func (h *handler) schedules(w http.ResponseWriter, r *http.Request) error {
	list, err := h.svc.Schedules(r.Context())
	if err != nil {
		return err
	}
	return reply(w, http.StatusOK, nonNil(list))
}

func (h *handler) addSchedule(w http.ResponseWriter, r *http.Request) error {
	var req client.ScheduleRequest
	if err := decodeBody(w, r, &req); err != nil {
		return err
	}
	s, err := h.svc.AddSchedule(r.Context(), req)
	if err != nil {
		return err
	}
	return reply(w, http.StatusCreated, s)
}

func (h *handler) schedule(w http.ResponseWriter, r *http.Request) error {
	s, err := h.svc.Schedule(r.Context(), r.PathValue("schedule"))
	if err != nil {
		return err
	}
	return reply(w, http.StatusOK, s)
}

func (h *handler) removeSchedule(w http.ResponseWriter, r *http.Request) error {
	if err := h.svc.RemoveSchedule(r.Context(), r.PathValue("schedule")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// scheduleAction serves the body-less POSTs that change a schedule and reply with it.
func (h *handler) scheduleAction(fn func(ctx context.Context, ref string) (*client.Schedule, error)) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		s, err := fn(r.Context(), r.PathValue("schedule"))
		if err != nil {
			return err
		}
		return reply(w, http.StatusOK, s)
	}
}

func (h *handler) runSchedule(w http.ResponseWriter, r *http.Request) error {
	run, err := h.svc.RunSchedule(r.Context(), r.PathValue("schedule"))
	if err != nil {
		return err
	}
	return reply(w, http.StatusOK, run)
}

// scheduleHistory serves a schedule's firing records; ?limit=N keeps the newest N.
func (h *handler) scheduleHistory(w http.ResponseWriter, r *http.Request) error {
	limit := 0
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return errorf(http.StatusBadRequest, "limit %q: want a whole number, 0 or more", v)
		}
		limit = n
	}
	runs, err := h.svc.ScheduleHistory(r.Context(), r.PathValue("schedule"), limit)
	if err != nil {
		return err
	}
	return reply(w, http.StatusOK, nonNil(runs))
}
