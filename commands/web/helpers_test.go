package web

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentd/agentd/internal/netguardtest"
)

// Nothing in these tests leaves 127.0.0.1: host names go through fakeDNS (never the
// system resolver, whose server is off-machine), and every fetcher carries a tripwire
// that fails the test and aborts the socket before connect(2) if the guard ever lets a
// non-loopback address through.

// fakeDNS is an injected resolver: a fixed table.
type fakeDNS = netguardtest.Resolver

// server is a loopback test server that counts the requests it got.
type server struct {
	*httptest.Server
	hits atomic.Int64
}

func newServer(t *testing.T, h http.HandlerFunc) *server {
	t.Helper()
	s := &server{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		h(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

// secretText is what secretTarget serves: a reply that shows a request reached it.
const secretText = "internal secret"

// secretTarget is the loopback service the guard tests aim at, as an agent's fetch aiming
// at a private address would: it answers every request with secretText.
func secretTarget(t *testing.T) *server {
	return newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Write([]byte(secretText))
	})
}

// closedServer is a server that has shut down: its address refuses connections.
func closedServer(t *testing.T) *server {
	s := newServer(t, func(http.ResponseWriter, *http.Request) {})
	s.Close()
	return s
}

func (s *server) addrPort() netip.AddrPort {
	return netip.MustParseAddrPort(strings.TrimPrefix(s.URL, "http://"))
}

func (s *server) port() string { return strconv.Itoa(int(s.addrPort().Port())) }

// siteURL is the server reached under the fake public name site.test.
func (s *server) siteURL(path string) string { return "http://site.test:" + s.port() + path }

// guarded returns a fetcher with the guard on (AllowPrivate false) that may reach exactly
// the given servers' address and port, nothing else, and resolves names through dns.
func guarded(t *testing.T, dns fakeDNS, allowed ...*server) *Fetcher {
	t.Helper()
	ok := map[netip.AddrPort]bool{}
	for _, s := range allowed {
		ok[s.addrPort()] = true
	}
	if dns == nil {
		dns = fakeDNS{}
	}
	if _, set := dns["site.test"]; !set {
		dns["site.test"] = []string{"127.0.0.1"}
	}
	return &Fetcher{
		Resolver:      dns.Lookup,
		allowAddr:     func(ap netip.AddrPort) bool { return ok[ap] },
		beforeConnect: tripwire(t),
	}
}

// tripwire refuses, and fails the test for, any connection that is not local.
func tripwire(t *testing.T) func(netip.AddrPort) error {
	return func(ap netip.AddrPort) error {
		ip := ap.Addr().Unmap()
		if ip.IsLoopback() || ip.IsUnspecified() {
			return nil
		}
		t.Errorf("tripwire: the fetcher tried to connect to %s", ap)
		return fmt.Errorf("tripwire: %s is not loopback", ap)
	}
}

// wantError checks err against wantErr: with wantErr set, t fails unless err contains it;
// without, t fails on any error. It reports whether the call succeeded as wanted, so the
// case goes on to check the result.
func wantError(t *testing.T, err error, wantErr string) (ok bool) {
	t.Helper()
	if wantErr != "" {
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Fatalf("err = %v, want %q", err, wantErr)
		}
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	return true
}
