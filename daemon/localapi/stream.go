package localapi

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/agentd/agentd/daemon/client"
)

// events streams client.Events as NDJSON, one flushed line each, for one agent
// (/v0/agents/{agent}/events) or all of them (/v0/events). ?since=N replays held events
// after seq N first. The stream ends when the client goes away or the Service closes the
// channel (the agent was removed, or the follower fell too far behind and must reconnect).
func (h *handler) events(w http.ResponseWriter, r *http.Request) error {
	since, err := sinceParam(r, "the seq of the last event seen")
	if err != nil {
		return err
	}
	ch, cancel, err := h.svc.Subscribe(r.PathValue("agent"), since)
	if err != nil {
		return err
	}
	defer cancel()
	return h.stream(w, r, ch)
}

// teamEvents streams a team run's transcript (/v0/teams/{team}/events): the entries
// after ?since=N (a transcript seq), then new ones, ending after the run's end.
func (h *handler) teamEvents(w http.ResponseWriter, r *http.Request) error {
	since, err := sinceParam(r, "the seq of the last transcript entry seen")
	if err != nil {
		return err
	}
	ch, cancel, err := h.svc.SubscribeTeam(r.PathValue("team"), since)
	if err != nil {
		return err
	}
	defer cancel()
	return h.stream(w, r, ch)
}

func sinceParam(r *http.Request, what string) (int64, error) {
	s := r.URL.Query().Get("since")
	if s == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, errorf(http.StatusBadRequest, "invalid since %q: want %s, a whole number ≥ 0", s, what)
	}
	return n, nil
}

// stream writes the events of ch until it closes or the client goes away.
func (h *handler) stream(w http.ResponseWriter, r *http.Request, ch <-chan client.Event) error {
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
