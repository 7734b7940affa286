package localapi

import (
	"encoding/json"
	"net/http"

	"github.com/agentd/agentd/api"
)

// events streams api.Events as NDJSON, one flushed line each: an agent's
// (/v0/agents/{agent}/events), every agent's (/v0/events) or a team run's transcript
// (/v0/teams/{team}/events). ?since=N replays held events after seq N first. The stream
// ends when the client goes away or the Service closes the channel (the agent was
// removed, the team run ended, or the follower fell too far behind and must reconnect).
func (h *handler) events(rt api.StreamRoute) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		ch, cancel, err := rt.Open(h.svc, r)
		if err != nil {
			return err
		}
		defer cancel()
		return h.stream(w, r, ch)
	}
}

// stream writes the events of ch until it closes or the client goes away.
func (h *handler) stream(w http.ResponseWriter, r *http.Request, ch <-chan api.Event) error {
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
