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
	agent, since, ok := c.eventsFrom(w, r)
	if !ok {
		return
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
	s := &eventStream{c: c, w: w, r: r, rc: http.NewResponseController(w), agent: agent, ended: sessionEnded(r)}
	fmt.Fprint(w, "retry: 500\n\n")
	if s.rc.Flush() != nil {
		return
	}
	if since != 0 {
		s.next = since + 1
	}
	s.serve(ch)
}

// eventsFrom reads which agent's events a stream shows ("" every agent's) and the seq it
// resumes after: Last-Event-ID when the browser reconnects, else ?since. A bad request
// is answered here and ok is false.
func (c *Console) eventsFrom(w http.ResponseWriter, r *http.Request) (agent string, since int64, ok bool) {
	if ref := r.FormValue("agent"); ref != "" {
		a, err := c.svc.Agent(r.Context(), ref)
		if err != nil {
			c.fail(w, err)
			return "", 0, false
		}
		agent = a.ID
	}
	since, _ = strconv.ParseInt(r.FormValue("since"), 10, 64)
	if id := r.Header.Get("Last-Event-ID"); id != "" {
		n, err := strconv.ParseInt(id, 10, 64)
		if err != nil || n < 0 {
			http.Error(w, "Last-Event-ID is not an event number", http.StatusBadRequest)
			return "", 0, false
		}
		since = n
	}
	return agent, since, true
}

// eventStream is one browser's open event stream.
type eventStream struct {
	c     *Console
	w     http.ResponseWriter
	r     *http.Request
	rc    *http.ResponseController
	agent string          // the agent whose events are sent; "" every agent's
	ended <-chan struct{} // closed when the session is logged out or ended by the daemon
	next  int64           // the seq this stream must see next; 0 until the first when since is 0
}

// serve sends the events from ch, and a keep-alive comment when idle, as long as the
// session lives: until it is logged out or ended by the daemon (ended), or its time is up
// unused (expiry).
func (s *eventStream) serve(ch <-chan api.Event) {
	tick := time.NewTicker(keepAlive)
	defer tick.Stop()
	id := sessionOf(s.r)
	expires, _ := s.c.auth.alive(id)
	expiry := time.NewTimer(expires.Sub(s.c.auth.now()))
	defer expiry.Stop()
	for {
		select {
		case <-s.r.Context().Done():
			return
		case <-s.ended:
			s.loggedOut()
			return
		case <-expiry.C:
			exp, ok := s.c.auth.alive(id) // used meanwhile: it lives on
			if !ok {
				s.loggedOut()
				return
			}
			expiry.Reset(exp.Sub(s.c.auth.now()))
			continue
		case <-tick.C:
			fmt.Fprint(s.w, ": keep-alive\n\n")
		case ev, ok := <-ch:
			if !ok {
				return // fell behind: the browser reconnects from its last id
			}
			if !s.send(ev) {
				return
			}
		}
		if s.rc.Flush() != nil {
			return
		}
	}
}

// send writes ev when it is for this stream's agent; false ends the stream: the session
// ended while ev waited (it is not sent), or events were lost to the daemon's replay
// window (the page is told to read it all again).
func (s *eventStream) send(ev api.Event) bool {
	select {
	case <-s.ended:
		s.loggedOut()
		return false
	default:
	}
	if s.next != 0 && ev.Seq > s.next {
		writeSSE(s.w, "reload", 0, "")
		s.rc.Flush()
		return false
	}
	s.next = ev.Seq + 1
	if s.agent != "" && ev.AgentID != s.agent {
		return true
	}
	if err := s.c.sendEvent(s.w, s.r, s.agent, csrfOf(s.r), ev); err != nil {
		s.c.log.Warn("web console: event not rendered", "seq", ev.Seq, "err", err)
	}
	return true
}

// loggedOut tells the page its session is over.
func (s *eventStream) loggedOut() {
	writeSSE(s.w, "loggedout", 0, "")
	s.rc.Flush()
}

// sendEvent writes what ev changes on the page that follows agent ("" the agents page).
func (c *Console) sendEvent(w http.ResponseWriter, r *http.Request, agent, csrf string, ev api.Event) error {
	var a *api.Agent
	if ev.Type != api.EventError && ev.Type != api.EventRemoved {
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
