package api

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// events streams client.Events as NDJSON, one flushed line each, for one agent
// (/v0/agents/{agent}/events) or all of them (/v0/events). ?since=N replays held events
// after seq N first. The stream ends when the client goes away or the Service closes the
// channel (the agent was removed, or the follower fell too far behind and must reconnect).
func (h *handler) events(w http.ResponseWriter, r *http.Request) error {
	var since int64
	if s := r.URL.Query().Get("since"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			return errorf(http.StatusBadRequest, "invalid since %q: want the seq of the last event seen, a whole number ≥ 0", s)
		}
		since = n
	}
	ch, cancel, err := h.svc.Subscribe(r.PathValue("agent"), since)
	if err != nil {
		return err
	}
	defer cancel()

	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	// The client waits for the headers before it reads a line; send them now.
	rc := http.NewResponseController(w)
	if err := rc.Flush(); err != nil {
		return err
	}
	for {
		select {
		case <-r.Context().Done():
			return nil
		case ev, ok := <-ch:
			if !ok {
				return nil
			}
			b, err := json.Marshal(ev)
			if err != nil {
				// One bad event must not cut every follower off on each reconnect.
				h.log.Error("api: event does not encode; skipped", "seq", ev.Seq, "type", ev.Type, "err", err)
				continue
			}
			if _, err := w.Write(append(b, '\n')); err != nil {
				return err
			}
			if err := rc.Flush(); err != nil {
				return err
			}
		}
	}
}
