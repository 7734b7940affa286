package localapi

import (
	"net/http"
	"strconv"

	"github.com/agentd/agentd/daemon/client"
)

// The memory endpoints (issue 4): /v0/memories is the collection, /v0/memory/... the index.

func (h *handler) memories(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	req := client.MemoryListRequest{Agent: q.Get("agent"), Kind: q.Get("kind")}
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			return errorf(http.StatusBadRequest, "query parameter limit=%q: want a whole number", s)
		}
		req.Limit = n
	}
	list, err := h.svc.Memories(r.Context(), req)
	if err != nil {
		return err
	}
	return reply(w, http.StatusOK, nonNil(list))
}

func (h *handler) addMemory(w http.ResponseWriter, r *http.Request) error {
	var req client.MemoryAddRequest
	if err := decodeBody(w, r, &req); err != nil {
		return err
	}
	m, err := h.svc.AddMemory(r.Context(), req)
	if err != nil {
		return err
	}
	return reply(w, http.StatusCreated, m)
}

func (h *handler) deleteMemory(w http.ResponseWriter, r *http.Request) error {
	if err := h.svc.DeleteMemory(r.Context(), r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (h *handler) searchMemory(w http.ResponseWriter, r *http.Request) error {
	var req client.MemorySearchRequest
	if err := decodeBody(w, r, &req); err != nil {
		return err
	}
	hits, err := h.svc.SearchMemory(r.Context(), req)
	if err != nil {
		return err
	}
	return reply(w, http.StatusOK, nonNil(hits))
}

func (h *handler) reindexMemory(w http.ResponseWriter, r *http.Request) error {
	st, err := h.svc.ReindexMemory(r.Context())
	if err != nil {
		return err
	}
	return reply(w, http.StatusOK, st)
}

func (h *handler) memoryStats(w http.ResponseWriter, r *http.Request) error {
	st, err := h.svc.MemoryStats(r.Context())
	if err != nil {
		return err
	}
	return reply(w, http.StatusOK, st)
}
