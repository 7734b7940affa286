package web

import (
	"context"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/internal/agenttest"
	"github.com/agentd/agentd/internal/testutil"
)

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
