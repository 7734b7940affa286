package web

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/agentd/agentd/api"
)

// keepAlive is how often an idle stream sends a comment, so a dead connection is noticed.
const keepAlive = 15 * time.Second

// events streams the daemon's events as Server-Sent Events, rendered as HTML fragments:
// rows for the agents page, stream entries and the waiting panel for an agent's page.
// Each carries its seq as the SSE id; a browser that reconnects sends the last one as
// Last-Event-ID and the stream resumes after it from the events the daemon still holds.
// A stream ends, with a last "loggedout" message, the moment its session ends.
func (c *Console) events(w http.ResponseWriter, r *http.Request) {
	agent := ""
	if ref := r.FormValue("agent"); ref != "" {
		a, err := c.svc.Agent(r.Context(), ref)
		if err != nil {
			c.fail(w, err)
			return
		}
		agent = a.ID
	}
	since, _ := strconv.ParseInt(r.FormValue("since"), 10, 64)
	if id := r.Header.Get("Last-Event-ID"); id != "" {
		n, err := strconv.ParseInt(id, 10, 64)
		if err != nil || n < 0 {
			http.Error(w, "Last-Event-ID is not an event number", http.StatusBadRequest)
			return
		}
		since = n
	}
	// Every agent's events, even for one agent's page: that stream has every seq, so a
	// seq skipped means the daemon no longer held what the page missed.
	ch, cancel, err := c.svc.Subscribe("", since)
	if err != nil {
		c.fail(w, err)
		return
	}
	defer cancel()
	c.streams.Add(1)
	defer c.streams.Add(-1)
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	fmt.Fprint(w, "retry: 500\n\n")
	if rc.Flush() != nil {
		return
	}
	tick := time.NewTicker(keepAlive)
	defer tick.Stop()
	// The stream lives as long as its session: it ends when the session is logged out or
	// ended by the daemon (ended), or when its time is up unused (expiry).
	id, ended := sessionOf(r), sessionEnded(r)
	expires, _ := c.auth.alive(id)
	expiry := time.NewTimer(expires.Sub(c.auth.now()))
	defer expiry.Stop()
	loggedOut := func() {
		writeSSE(w, "loggedout", 0, "")
		rc.Flush()
	}
	next := since + 1 // the seq this stream must see next; 0 until the first when since is 0
	if since == 0 {
		next = 0
	}
	for {
		select {
		case <-r.Context().Done():
			return
		case <-ended:
			loggedOut()
			return
		case <-expiry.C:
			exp, ok := c.auth.alive(id) // used meanwhile: it lives on
			if !ok {
				loggedOut()
				return
			}
			expiry.Reset(exp.Sub(c.auth.now()))
			continue
		case <-tick.C:
			fmt.Fprint(w, ": keep-alive\n\n")
		case ev, ok := <-ch:
			if !ok {
				return // fell behind: the browser reconnects from its last id
			}
			select {
			case <-ended: // ended while this event waited: it is not sent
				loggedOut()
				return
			default:
			}
			if next != 0 && ev.Seq > next {
				// Events were lost to the daemon's replay window: the page reads it all again.
				writeSSE(w, "reload", 0, "")
				rc.Flush()
				return
			}
			next = ev.Seq + 1
			if agent != "" && ev.AgentID != agent {
				continue
			}
			if err := c.sendEvent(w, r, agent, csrfOf(r), ev); err != nil {
				c.log.Warn("web console: event not rendered", "seq", ev.Seq, "err", err)
			}
		}
		if rc.Flush() != nil {
			return
		}
	}
}

// sendEvent writes what ev changes on the page that follows agent ("" the agents page).
func (c *Console) sendEvent(w http.ResponseWriter, r *http.Request, agent, csrf string, ev api.Event) error {
	var a *api.Agent
	if ev.Type != api.EventThoughts && ev.Type != api.EventError && ev.Type != api.EventRemoved {
		var err error
		if a, err = c.svc.Agent(r.Context(), ev.AgentID); err != nil {
			a = nil // removed since: the event still shows
		}
	}
	if agent == "" {
		if ev.Type == api.EventRemoved {
			return writeSSE(w, "removed", ev.Seq, "agent-"+ev.AgentID)
		}
		if a == nil {
			return writeSSE(w, "seen", ev.Seq, "")
		}
		html, err := c.fragment("row", rowOf(a))
		if err != nil {
			return err
		}
		return writeSSE(w, "row", ev.Seq, html)
	}
	if a != nil { // first the waiting panel, without an id: the entry below carries it
		html, err := c.fragment("waiting", waitingOf(a, csrf))
		if err != nil {
			return err
		}
		if err := writeSSE(w, "waiting", 0, html); err != nil {
			return err
		}
		if html, err = c.fragment("agenthead", rowOf(a)); err != nil {
			return err
		}
		if err := writeSSE(w, "head", 0, html); err != nil {
			return err
		}
	}
	html, err := c.fragment("event", eventOf(ev))
	if err != nil {
		return err
	}
	return writeSSE(w, "event", ev.Seq, html)
}

// writeSSE writes one SSE message; each line of data gets its own data: field, so a
// newline in it cannot end the message or forge a field.
func writeSSE(w http.ResponseWriter, event string, id int64, data string) error {
	var b strings.Builder
	b.WriteString("event: " + event + "\n")
	if id > 0 {
		b.WriteString("id: " + strconv.FormatInt(id, 10) + "\n")
	}
	for _, l := range strings.Split(strings.ReplaceAll(data, "\r", ""), "\n") {
		b.WriteString("data: " + l + "\n")
	}
	b.WriteString("\n")
	_, err := w.Write([]byte(b.String()))
	return err
}
