package web

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentd/agentd/internal/netguardtest"
)

// TestSSRFCorpus fetches each URL twice: with the guard on it must be refused before any
// connection (the target server, on the very port named, sees nothing); with AllowPrivate
// the ones that lead to the loopback target reach it, which proves the refusal came from
// the guard and not from a dead address.
func TestSSRFCorpus(t *testing.T) {
	target := secretTarget(t)
	port := target.port()
	dns := fakeDNS{
		"localhost":               {"127.0.0.1"},
		"public-looking.example":  {"127.0.0.1"},
		"metadata.example":        {"169.254.169.254"},
		"intranet.example":        {"10.20.30.40"},
		"mixed.example":           {"93.184.215.14", "127.0.0.1"},
		"v6-only-private.example": {"fd12:3456::1"},
	}
	tests := []struct {
		name      string
		url       string
		kind      string // what the refusal must name
		reachable bool   // with AllowPrivate the loopback target answers
	}{
		{name: "loopback_literal", url: "http://127.0.0.1:" + port + "/", kind: "loopback", reachable: true},
		{name: "loopback_other", url: "http://127.0.0.2:" + port + "/", kind: "loopback"},
		{name: "localhost", url: "http://localhost:" + port + "/", kind: "loopback", reachable: true},
		{name: "localhost_upper", url: "http://LOCALHOST:" + port + "/", kind: "loopback", reachable: true},
		{name: "ipv6_loopback", url: "http://[::1]:" + port + "/", kind: "loopback"},
		{name: "ipv4_mapped_loopback", url: "http://[::ffff:127.0.0.1]:" + port + "/", kind: "loopback", reachable: true},
		{name: "ipv4_mapped_hex", url: "http://[::ffff:7f00:1]:" + port + "/", kind: "loopback", reachable: true},
		{name: "decimal_ip", url: "http://2130706433:" + port + "/", kind: "loopback", reachable: true},
		{name: "octal_ip", url: "http://017700000001:" + port + "/", kind: "loopback", reachable: true},
		{name: "hex_ip", url: "http://0x7f000001:" + port + "/", kind: "loopback", reachable: true},
		{name: "short_ip", url: "http://127.1:" + port + "/", kind: "loopback", reachable: true},
		{name: "unspecified", url: "http://0.0.0.0:" + port + "/", kind: "unspecified"},
		{name: "private_10", url: "http://10.0.0.1:" + port + "/", kind: "private"},
		{name: "private_192", url: "http://192.168.0.1/", kind: "private"},
		{name: "cloud_metadata", url: "http://169.254.169.254/latest/meta-data/", kind: "link-local"},
		{name: "cgnat", url: "http://100.64.0.1/", kind: "carrier-grade NAT"},
		{name: "unique_local", url: "http://[fd00::1]/", kind: "unique-local"},
		{name: "link_local_v6", url: "http://[fe80::1%25lo]:" + port + "/", kind: "link-local"},
		{name: "multicast", url: "http://224.0.0.1/", kind: "multicast"},
		{name: "https_private", url: "https://10.0.0.1/", kind: "private"},
		{name: "name_resolving_to_loopback", url: "http://public-looking.example:" + port + "/", kind: "loopback", reachable: true},
		{name: "name_resolving_to_metadata", url: "http://metadata.example/", kind: "link-local"},
		{name: "name_resolving_to_private", url: "http://intranet.example/", kind: "private"},
		{name: "one_private_answer_taints_all", url: "http://mixed.example:" + port + "/", kind: "loopback"},
		{name: "name_resolving_to_ula", url: "http://v6-only-private.example/", kind: "unique-local"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := target.hits.Load()
			f := &Fetcher{Resolver: dns.Lookup, beforeConnect: tripwire(t)}
			_, err := f.Fetch(context.Background(), tc.url)
			var be *BlockedError
			if !errors.As(err, &be) || !errors.Is(err, ErrBlocked) {
				t.Fatalf("Fetch(%s) = %v, want a BlockedError", tc.url, err)
			}
			if be.Kind != tc.kind {
				t.Errorf("kind %q, want %q (%v)", be.Kind, tc.kind, err)
			}
			if !strings.Contains(err.Error(), "allow_private") {
				t.Errorf("error %q does not say how to allow it", err)
			}
			if n := target.hits.Load() - before; n != 0 {
				t.Fatalf("the target got %d requests despite the refusal", n)
			}

			if !tc.reachable {
				return // AllowPrivate would dial off this machine
			}
			f = &Fetcher{Resolver: dns.Lookup, AllowPrivate: true, beforeConnect: tripwire(t)}
			page, err := f.Fetch(context.Background(), tc.url)
			if err != nil || page.Text != secretText {
				t.Fatalf("with AllowPrivate: page %+v, err %v; want the target's text", page, err)
			}
		})
	}
}

// TestGuardTestHookIsExact checks the hook the other tests use: it admits one address and
// port, so the same IP on another port, and another loopback IP, stay blocked.
func TestGuardTestHookIsExact(t *testing.T) {
	allowed := newServer(t, func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) })
	other := newServer(t, func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("other")) })
	f := guarded(t, nil, allowed)
	if _, err := f.Fetch(context.Background(), allowed.siteURL("/")); err != nil {
		t.Fatalf("allowed server: %v", err)
	}
	for _, u := range []string{other.siteURL("/"), other.URL, "http://127.0.0.2:" + allowed.port() + "/"} {
		if _, err := f.Fetch(context.Background(), u); !errors.Is(err, ErrBlocked) {
			t.Errorf("Fetch(%s) = %v, want ErrBlocked", u, err)
		}
	}
	if other.hits.Load() != 0 {
		t.Errorf("the other server was reached")
	}
}

// TestDNSRebinding: the name answers with the allowed server first, then with a private
// address. The second fetch dials again (the server closes connections) and is refused.
func TestDNSRebinding(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		w.Write([]byte("hello"))
	})
	var lookups atomic.Int64
	f := guarded(t, nil, srv)
	f.Resolver = func(_ context.Context, host string) ([]netip.Addr, error) {
		if lookups.Add(1) == 1 {
			return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
		}
		return []netip.Addr{netip.MustParseAddr("10.0.0.7")}, nil
	}
	u := "http://rebind.example:" + srv.port() + "/"
	if _, err := f.Fetch(context.Background(), u); err != nil {
		t.Fatalf("first fetch: %v", err)
	}
	_, err := f.Fetch(context.Background(), u)
	var be *BlockedError
	if !errors.As(err, &be) || be.Addr.String() != "10.0.0.7" || be.Host != "rebind.example" {
		t.Fatalf("second fetch = %v, want refused for 10.0.0.7", err)
	}
	if want := "rebind.example resolves to 10.0.0.7, a private address"; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q, want it to contain %q", err, want)
	}
}

// TestRedirectToPrivate: an allowed page redirects to non-public places; every hop is
// dialled through the guard, so each one is refused and the private server sees nothing.
func TestRedirectToPrivate(t *testing.T) {
	private := newServer(t, func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("internal")) })
	var to atomic.Value
	site := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, to.Load().(string), http.StatusFound)
	})
	dns := fakeDNS{"intranet.example": {"10.9.8.7"}, "localhost": {"127.0.0.1"}}
	tests := []struct {
		name, to, want string
	}{
		{name: "loopback_other_port", to: private.URL + "/admin", want: "is a loopback address"},
		{name: "localhost_name", to: "http://localhost:" + private.port() + "/", want: "localhost resolves to 127.0.0.1, a loopback address"},
		{name: "cloud_metadata", to: "http://169.254.169.254/latest/meta-data/iam", want: "is a link-local address"},
		{name: "private_name", to: "http://intranet.example/", want: "intranet.example resolves to 10.9.8.7"},
		{name: "decimal_loopback", to: "http://2130706433:" + private.port() + "/", want: "loopback"},
		{name: "mapped_v6", to: "http://[::ffff:10.0.0.1]/", want: "private"},
		{name: "relative_to_ip", to: "//192.168.1.1/router", want: "192.168.1.1 is a private address"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			to.Store(tc.to)
			f := guarded(t, dns, site)
			start := site.siteURL("/start")
			_, err := f.Fetch(context.Background(), start)
			if !errors.Is(err, ErrBlocked) {
				t.Fatalf("Fetch = %v, want ErrBlocked", err)
			}
			for _, want := range []string{tc.want, "redirected from " + start} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
		})
	}
	if n := private.hits.Load(); n != 0 {
		t.Errorf("the private server got %d requests", n)
	}
}

// TestCorpusReadWebpage runs the shared address corpus through read_webpage: every row is
// refused, with the kind the row names, and the loopback target on the very port named
// sees nothing; with allow_private the rows marked reach do reach it, which shows the
// guard read the host exactly as the client would have.
func TestCorpusReadWebpage(t *testing.T) {
	target := secretTarget(t)
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
			if out, err := run(t, rw, string(args)); err != nil || !strings.Contains(out, secretText) {
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
