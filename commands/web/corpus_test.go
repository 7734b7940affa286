package web

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/agentd/agentd/internal/netguardtest"
)

// TestCorpusReadWebpage runs the shared address corpus through read_webpage: every row is
// refused, with the kind the row names, and the loopback target on the very port named
// sees nothing; with allow_private the rows marked reach do reach it, which shows the
// guard read the host exactly as the client would have.
func TestCorpusReadWebpage(t *testing.T) {
	target := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Write([]byte("internal secret"))
	})
	dns := fakeDNS(netguardtest.Names)
	for _, tc := range netguardtest.Corpus(target.port()) {
		t.Run(tc.Name, func(t *testing.T) {
			args, _ := json.Marshal(map[string]any{"url": tc.URL, "get_raw_content": true})
			before := target.hits.Load()
			rw := &ReadWebpage{Fetcher: &Fetcher{Resolver: dns.Lookup, beforeConnect: tripwire(t)}}
			out, err := run(t, rw, string(args))
			if err == nil {
				t.Fatalf("read_webpage %s = %q, want a refusal", tc.URL, out)
			}
			if n := target.hits.Load() - before; n != 0 {
				t.Fatalf("the target got %d requests despite the refusal %v", n, err)
			}
			var be *BlockedError
			if tc.Kind != "" {
				if !errors.As(err, &be) || be.Kind != tc.Kind {
					t.Fatalf("error %v; want a BlockedError of kind %q", err, tc.Kind)
				}
				if !strings.Contains(err.Error(), "allow_private") {
					t.Errorf("error %q does not say how to allow it", err)
				}
			}
			if !tc.Reach {
				return
			}
			rw = &ReadWebpage{Fetcher: &Fetcher{Resolver: dns.Lookup, AllowPrivate: true, beforeConnect: tripwire(t)}}
			if out, err := run(t, rw, string(args)); err != nil || !strings.Contains(out, "internal secret") {
				t.Fatalf("with allow_private: %q, %v; want the target's text", out, err)
			}
		})
	}
}

// TestCorpusWebSearch: web_search only ever talks to the configured backend. A model
// that searches for a corpus URL gets it sent to SearxNG as query text; the address itself
// is never dialled, and a result pointing at it is only text the model may then pass to
// read_webpage, which the guard refuses (TestCorpusReadWebpage).
func TestCorpusWebSearch(t *testing.T) {
	target := newServer(t, func(w http.ResponseWriter, r *http.Request) {})
	var mu sync.Mutex
	var queries []string
	searx := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		queries = append(queries, r.URL.Query().Get("q"))
		mu.Unlock()
		json.NewEncoder(w).Encode(map[string]any{"results": []map[string]string{
			{"title": "t", "url": r.URL.Query().Get("q"), "content": "c"},
		}})
	})
	ws := NewWebSearch(&SearxNG{BaseURL: searx.URL}, 0)
	for _, tc := range netguardtest.Corpus(target.port()) {
		t.Run(tc.Name, func(t *testing.T) {
			args, _ := json.Marshal(map[string]string{"query": tc.URL})
			out, err := run(t, ws, string(args))
			if err != nil {
				t.Fatalf("web_search: %v", err)
			}
			mu.Lock()
			last := queries[len(queries)-1]
			mu.Unlock()
			if last != oneLine(tc.URL) || !strings.Contains(out, "1. t") {
				t.Errorf("searxng got query %q, output %q", last, out)
			}
		})
	}
	if n := target.hits.Load(); n != 0 {
		t.Errorf("web_search reached the target %d times", n)
	}
}
