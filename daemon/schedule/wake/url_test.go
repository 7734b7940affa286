package wake

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// page is a loopback server of one page whose body and ETag the test sets; it records
// the conditional headers each request carried.
type page struct {
	*httptest.Server
	mu       sync.Mutex
	body     string
	etag     string
	modified string
	status   int
	inm      []string // If-None-Match of each request
	hits     atomic.Int64
}

func newPage(t testing.TB) *page {
	p := &page{status: http.StatusOK}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.hits.Add(1)
		p.mu.Lock()
		defer p.mu.Unlock()
		p.inm = append(p.inm, r.Header.Get("If-None-Match"))
		if p.etag != "" {
			w.Header().Set("ETag", p.etag)
			if r.Header.Get("If-None-Match") == p.etag {
				w.WriteHeader(http.StatusNotModified)
				return
			}
		}
		if p.modified != "" {
			w.Header().Set("Last-Modified", p.modified)
			if r.Header.Get("If-Modified-Since") == p.modified {
				w.WriteHeader(http.StatusNotModified)
				return
			}
		}
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(p.status)
		fmt.Fprint(w, p.body)
	}))
	t.Cleanup(p.Close)
	return p
}

func (p *page) set(body, etag string) {
	p.mu.Lock()
	p.body, p.etag = body, etag
	p.mu.Unlock()
}

func (p *page) lastINM() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.inm[len(p.inm)-1]
}

// TestURLWakesOnChangedContent: the ETag the last run saw goes back with each request, a
// 304 is nothing to do, new content wakes with its line diff, and a page served again
// unchanged (no validators, or new ones) is nothing to do.
func TestURLWakesOnChangedContent(t *testing.T) {
	r := newRig(t, false)
	id := r.schedule("s-url")
	p := newPage(t)
	p.set("alpha\nbeta\n", `"v1"`)
	c := Conditions{URLs: []string{p.URL + "/feed"}}

	if v := r.fire(id, c, Target{}); v.Outcome != Wake || !strings.Contains(v.Observation, "alpha") || p.lastINM() != "" {
		t.Fatalf("first look: %+v (If-None-Match %q)", v, p.lastINM())
	}
	if v := r.fire(id, c, Target{}); v.Outcome != NothingToDo || !strings.Contains(v.Reason, "not modified") || p.lastINM() != `"v1"` {
		t.Fatalf("unchanged: %+v (If-None-Match %q)", v, p.lastINM())
	}
	p.set("alpha\ngamma\n", `"v2"`)
	v := r.fire(id, c, Target{})
	if v.Outcome != Wake || !strings.Contains(v.Observation, "-beta") || !strings.Contains(v.Observation, "+gamma") || !strings.Contains(v.Reason, "(+1 −1 lines)") {
		t.Fatalf("changed: %+v", v)
	}
	if v := r.fire(id, c, Target{}); v.Outcome != NothingToDo || p.lastINM() != `"v2"` {
		t.Fatalf("after the run saw v2: %+v (If-None-Match %q)", v, p.lastINM())
	}
	p.set("alpha\ngamma\n", `"v3"`) // the same content under a new ETag
	if v := r.fire(id, c, Target{}); v.Outcome != NothingToDo || !strings.Contains(v.Reason, "unchanged") {
		t.Fatalf("same content, new ETag: %+v", v)
	}
	p.set("alpha\ngamma\n", "") // no validators at all: the content decides
	if v := r.fire(id, c, Target{}); v.Outcome != NothingToDo {
		t.Fatalf("same content, no ETag: %+v", v)
	}
}

// TestURLLastModified: a page with only Last-Modified is asked If-Modified-Since.
func TestURLLastModified(t *testing.T) {
	r := newRig(t, false)
	id := r.schedule("s-lm")
	p := newPage(t)
	p.body, p.modified = "news\n", "Wed, 21 Oct 2026 07:28:00 GMT"
	c := Conditions{URLs: []string{p.URL}}
	r.fire(id, c, Target{})
	hits := p.hits.Load()
	if v := r.fire(id, c, Target{}); v.Outcome != NothingToDo || !strings.Contains(v.Reason, "not modified") || p.hits.Load() != hits+1 {
		t.Fatalf("unchanged: %+v", v)
	}
}

// TestURLFailures: an error status, a server that never answers (cut by the fetcher's
// time bound) and a page too large (cut at its byte bound, not a failure) end as they
// should, and a failed check writes none of what the run saw.
func TestURLFailures(t *testing.T) {
	r := newRig(t, false)
	r.fetch.Timeout = 200 * time.Millisecond // the hang is cut
	r.fetch.MaxBytes = 1 << 10
	p := newPage(t)
	p.status = http.StatusInternalServerError
	id := r.schedule("s-500")
	if v := r.fire(id, Conditions{URLs: []string{p.URL}}, Target{}); v.Outcome != CheckFailed || !strings.Contains(v.Reason, "500") {
		t.Fatalf("500: %+v", v)
	}
	if r.state(id).Seen != "{}" {
		t.Fatalf("a failed check stored what it saw: %s", r.state(id).Seen)
	}

	hang := make(chan struct{})
	defer close(hang)
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		select {
		case <-hang:
		case <-req.Context().Done():
		}
	}))
	defer slow.Close()
	id = r.schedule("s-hang")
	if v := r.fire(id, Conditions{URLs: []string{slow.URL}}, Target{}); v.Outcome != CheckFailed || !strings.Contains(v.Reason, "gave up after") {
		t.Fatalf("hang: %+v", v)
	}

	r.fetch.Timeout = time.Minute // only the byte bound cuts the flood, however loaded the machine
	big := newPage(t)
	big.body = strings.Repeat("flood ", 64<<10)
	id = r.schedule("s-big")
	v := r.fire(id, Conditions{URLs: []string{big.URL}}, Target{})
	if v.Outcome != Wake || len(v.Observation) > DefaultMaxObservation+100 {
		t.Fatalf("flood: %s, %d bytes of observation", v.Outcome, len(v.Observation))
	}
}

// TestURLRefusedByTheGuard: with the guard on, as read_webpage has it, a URL to a loopback
// address in any of its forms, or to a name that resolves to one, is refused before a
// connection: at Validate and at every firing, as a failed check; the server sees nothing.
// (Every name resolves to 127.0.0.1 here, so nothing could leave the machine anyway.)
func TestURLRefusedByTheGuard(t *testing.T) {
	r := newRig(t, true)
	p := newPage(t)
	p.set("private\n", "")
	port := p.URL[strings.LastIndex(p.URL, ":")+1:]
	for i, u := range []string{
		p.URL, "http://localhost:" + port, "http://2130706433:" + port, "http://0x7f.1:" + port,
		"http://[::ffff:127.0.0.1]:" + port, "http://intranet.example:" + port,
	} {
		c := Conditions{URLs: []string{u}}
		if !strings.Contains(u, ".example") && !strings.Contains(u, "localhost") {
			if err := r.e.Validate(c, Target{}); err == nil {
				t.Errorf("Validate(%s) passed", u)
			}
		}
		id := r.schedule(fmt.Sprintf("s-guard%d", i))
		v := r.fire(id, c, Target{})
		if v.Outcome != CheckFailed || !strings.Contains(v.Reason, "a loopback address; only public addresses may be reached") {
			t.Errorf("%s: %+v", u, v)
		}
	}
	if n := p.hits.Load(); n != 0 {
		t.Fatalf("the guarded server got %d requests", n)
	}
	for _, u := range []string{"ftp://example.com/x", "example.com/feed", "https://user:pw@example.com/"} {
		if _, err := Parse(Flags{URLs: []string{u}}); err == nil {
			t.Errorf("Parse(--when-url %s) passed", u)
		}
	}
}
