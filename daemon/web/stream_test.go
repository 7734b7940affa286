package web

import (
	"bufio"
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/internal/agenttest"
	"github.com/agentd/agentd/internal/testutil"
)

// sse is one Server-Sent Events message.
type sse struct {
	Event string
	ID    int64
	Data  string
}

// stream reads a console event stream the way EventSource does.
type stream struct {
	t    testing.TB
	resp *http.Response
	msgs chan sse
}

func (b *browser) stream(path string, lastID int64) *stream {
	b.t.Helper()
	req, _ := http.NewRequest("GET", b.base+path, nil)
	if lastID > 0 {
		req.Header.Set("Last-Event-ID", strconv.FormatInt(lastID, 10))
	}
	resp, err := b.hc.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	must(b.t, resp.StatusCode == 200 && resp.Header.Get("Content-Type") == "text/event-stream", "stream: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	s := &stream{t: b.t, resp: resp, msgs: make(chan sse, 1024)}
	go func() {
		defer close(s.msgs)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		var m sse
		var data []string
		for sc.Scan() {
			l := sc.Text()
			switch {
			case l == "":
				if m.Event != "" {
					m.Data = strings.Join(data, "\n")
					s.msgs <- m
				}
				m, data = sse{}, nil
			case strings.HasPrefix(l, "event: "):
				m.Event = l[len("event: "):]
			case strings.HasPrefix(l, "id: "):
				m.ID, _ = strconv.ParseInt(l[len("id: "):], 10, 64)
			case strings.HasPrefix(l, "data: "):
				data = append(data, l[len("data: "):])
			}
		}
	}()
	return s
}

// next returns the next message with an id.
func (s *stream) next() sse {
	s.t.Helper()
	for {
		select {
		case m, ok := <-s.msgs:
			if !ok {
				s.t.Fatal("the stream ended")
			}
			if m.ID > 0 {
				return m
			}
		case <-time.After(10 * time.Second):
			s.t.Fatal("no event for 10s")
		}
	}
}

func (s *stream) close() { s.resp.Body.Close() }

var eventsRE = regexp.MustCompile(`data-events="([^"]+)"`)

// TestStreamResumesWithoutLossOrDuplicates reads the agents page's stream, drops the
// connection while the agent goes on, and reconnects with Last-Event-ID: the ids seen
// over both connections are every seq once, in order (the all-agents stream sees every
// seq the broker stamps).
func TestStreamResumesWithoutLossOrDuplicates(t *testing.T) {
	e := newEnv(t)
	var writes []string
	for i := range 6 {
		writes = append(writes, reply("write_file", map[string]string{"path": "f" + strconv.Itoa(i), "contents": "x\n"}, nil))
	}
	e.script(writes...)
	b := e.loggedIn()
	m := eventsRE.FindStringSubmatch(b.get("/").Body)
	must(t, m != nil, "the agents page follows no stream")
	path := strings.ReplaceAll(m[1], "&amp;", "&")

	s := b.stream(path, 0)
	a := e.create("streamer")
	svc := agenttest.Of(e.sup)
	decide := func() {
		t.Helper()
		a := e.waitState(a.ID, api.StateAwaitingDecision)
		if _, err := svc.Decide(context.Background(), a.ID, api.DecideRequest{ProposalID: a.Pending.ID, Kind: api.DecisionApprove, By: "t", Source: "agentctl"}); err != nil {
			t.Fatal(err)
		}
	}
	decide()
	decide()
	var seen []int64
	first := s.next()
	seen = append(seen, first.ID)
	must(t, first.Event == "row" && strings.Contains(first.Data, `id="agent-`+a.ID+`"`), "first message: %+v", first)
	for len(seen) < 5 {
		seen = append(seen, s.next().ID)
	}
	s.close()
	// While no one follows: more steps.
	decide()
	decide()
	e.waitState(a.ID, api.StateAwaitingDecision)
	s = b.stream(path, seen[len(seen)-1])
	defer s.close()
	decide()
	e.waitState(a.ID, api.StateAwaitingDecision)
	want := e.con.latest.Load()
	for seen[len(seen)-1] < want {
		seen = append(seen, s.next().ID)
	}
	for i := 1; i < len(seen); i++ {
		must(t, seen[i] == seen[i-1]+1, "ids over the reconnect are not every seq once: %v", seen)
	}
	must(t, len(seen) >= 12, "too few events to say anything: %v", seen)
}

// TestAgentStreamRendersEveryField checks the agent page's stream: the waiting panel and
// each entry with the proposal's thoughts, result and decision.
func TestAgentStreamRendersEveryField(t *testing.T) {
	e := newEnv(t)
	e.script(reply("write_file", map[string]string{"path": "a.txt", "contents": "hello\n"}, nil))
	a := &api.Agent{ID: e.createIdle(1)[0]} // its run starts once the page follows it
	b := e.loggedIn()
	path := strings.ReplaceAll(eventsRE.FindStringSubmatch(b.get("/agents/" + a.ID).Body)[1], "&amp;", "&")
	must(t, strings.Contains(path, "agent="+a.ID), "the agent page follows %s", path)
	s := b.stream(path, 0)
	defer s.close()
	_, err := e.sup.API().Runs.TaskRun(context.Background(), a.ID, api.TaskRequest{Task: "write a.txt"})
	must(t, err == nil, "%v", err)
	p := e.waitState(a.ID, api.StateAwaitingDecision).Pending
	if _, err := e.sup.API().Decisions.Decide(context.Background(), a.ID, api.DecideRequest{ProposalID: p.ID, Kind: api.DecisionApprove, By: "pat", Source: "agentctl"}); err != nil {
		t.Fatal(err)
	}
	var all strings.Builder
	waiting := false
	deadline := time.After(10 * time.Second)
	for !strings.Contains(all.String(), "touched") && !strings.Contains(all.String(), "event-result") {
		select {
		case m := <-s.msgs:
			if m.Event == "waiting" {
				waiting = true
			}
			all.WriteString(m.Data + "\n")
		case <-deadline:
			t.Fatalf("no result in the stream:\n%s", all.String())
		}
	}
	for _, want := range []string{"event-proposal", "Observations", "Thought", "Reasoning", "Self-criticism", "Plan", "Says", "I will write_file", "a.txt", "approve by pat (agentctl)", "event-result", "succeeded"} {
		must(t, strings.Contains(all.String(), want), "the stream does not show %q:\n%s", want, all.String())
	}
	must(t, waiting, "the stream never sent the waiting panel")
}

// gapService replays, after any since, events from seq since+3: the daemon dropped two
// from its replay window while the page was away.
type gapService struct {
	service
}

func (g gapService) Subscribe(ref string, since int64) (<-chan api.Event, func(), error) {
	ch := make(chan api.Event, 2)
	ch <- api.Event{Seq: since + 3, Type: api.EventError, AgentID: "a-1", Message: "later"}
	return ch, func() {}, nil
}

// TestStreamGapAsksForReload: a reconnect that cannot be resumed without loss tells the
// page to read everything again, rather than going on as if nothing was missed.
func TestStreamGapAsksForReload(t *testing.T) {
	e := newEnv(t)
	con, err := New(Options{Service: gapService{service{agenttest.Of(e.sup), e.mgr}}})
	must(t, err == nil, "%v", err)
	base, err := con.Listen(context.Background(), "127.0.0.1:0")
	must(t, err == nil, "%v", err)
	t.Cleanup(func() { con.Close(context.Background()) })
	login, _ := con.LoginURL()
	b := e.browser()
	b.base = strings.TrimSuffix(base, "/")
	b.get(login)
	s := b.stream("/events", 40)
	defer s.close()
	select {
	case m := <-s.msgs:
		must(t, m.Event == "reload", "after a gap the stream sent %+v, want reload", m)
	case <-time.After(5 * time.Second):
		t.Fatal("no reload after a gap")
	}
}

// ended waits until the stream ends, reading what it sends; it returns the event types
// it sent before ending.
func (s *stream) ended(within time.Duration) ([]string, bool) {
	var got []string
	deadline := time.After(within)
	for {
		select {
		case m, ok := <-s.msgs:
			if !ok {
				return got, true
			}
			got = append(got, m.Event)
		case <-deadline:
			return got, false
		}
	}
}

// syncClock is a settable clock for a console's sessions, safe across its goroutines.
type syncClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *syncClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *syncClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// The session is checked for every event a stream sends, not only when the stream
// starts: logging out, the session expiring and the daemon ending every session close
// the session's open streams at once, with a last "loggedout" message; another
// browser's stream goes on.
func TestSessionEndClosesItsStreams(t *testing.T) {
	e := newEnv(t)
	clk := &syncClock{t: time.Date(2026, 11, 25, 3, 0, 0, 0, time.UTC)}
	con, err := New(Options{Service: service{agenttest.Of(e.sup), e.mgr}, Now: clk.now})
	must(t, err == nil, "%v", err)
	base, err := con.Listen(context.Background(), "127.0.0.1:0")
	must(t, err == nil, "%v", err)
	t.Cleanup(func() { con.Close(context.Background()) })
	login := func() *browser {
		b := e.browser()
		b.base = strings.TrimSuffix(base, "/")
		u, err := con.LoginURL()
		must(t, err == nil, "%v", err)
		must(t, b.get(u).StatusCode == 200, "login failed")
		return b
	}
	for _, tc := range []struct {
		name string
		end  func(b *browser)
		// all is set when every session ends, the other browser's too.
		all bool
	}{
		{"log_out", func(b *browser) {
			r := b.post("/logout", url.Values{"csrf": {b.csrf()}})
			must(t, r.StatusCode == 200, "log out: %d", r.StatusCode)
		}, false},
		{"session_expires", func(*browser) {
			clk.add(sessionTTL - time.Hour + time.Second) // idle a second too long; the other an hour less
			login()                                       // any request looks at the sessions
		}, false},
		{"daemon_ends_every_session", func(*browser) {
			must(t, con.EndSessions() >= 2, "fewer than the two sessions ended")
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := login()
			s := b.stream("/events", 0)
			defer s.close()
			clk.add(time.Hour)
			other := login()
			os := other.stream("/events", 0)
			defer os.close()
			testutil.Eventually(t, 10*time.Second, "both streams open", func() bool { return con.openStreams() == 2 })
			tc.end(b)
			got, ok := s.ended(10 * time.Second)
			must(t, ok, "the stream is still open 10s after its session ended (it sent %v)", got)
			must(t, len(got) > 0 && got[len(got)-1] == "loggedout", "the stream ended without saying why: %v", got)
			must(t, b.get("/events").StatusCode == 401, "a new stream opened without a session")
			if tc.all {
				_, ok := os.ended(10 * time.Second)
				must(t, ok, "the other browser's stream is still open after every session ended")
				return
			}
			must(t, con.openStreams() == 1, "%d streams open, want the other browser's", con.openStreams())
		})
	}
}

// In Chromium: logging out in one tab stops the live stream of the console open in
// another tab of the same browser, which says so; agents created after it never show there.
func TestBrowserLogOutStopsOtherTabsStream(t *testing.T) {
	c := newChrome(t)
	e := newEnv(t)
	login, err := e.con.LoginURL()
	must(t, err == nil, "%v", err)
	c.do("log in", chromedp.Navigate(login), chromedp.WaitVisible(chromedp.ID("agents")))
	c.wait("the stream to open", `document.getElementById("live").textContent === "live"`)
	other := c.tab()
	other.do("open the console in another tab", chromedp.Navigate(e.base), chromedp.WaitVisible(chromedp.ID("agents")))
	testutil.Eventually(t, 10*time.Second, "both tabs' streams open", func() bool { return e.con.openStreams() == 2 })
	other.do("log out there", chromedp.Click(chromedp.CSS(`form[action="/logout"] button`)), chromedp.WaitVisible(chromedp.ID("main")))
	c.wait("the first tab to say it is logged out", `document.body.dataset.loggedOut === "true"`)
	testutil.Eventually(t, 10*time.Second, "every stream closed", func() bool { return e.con.openStreams() == 0 })
	a := e.create("after-logout")
	e.waitState(a.ID, api.StateAwaitingDecision)
	must(t, !eval[bool](c, `!!document.getElementById("agent-`+a.ID+`")`), "an agent created after logging out showed in the other tab")
	c.shot("logged-out-tab")
}

// openStreams is how many event streams are open now.
func (c *Console) openStreams() int { return int(c.streams.Load()) }
