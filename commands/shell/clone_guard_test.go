package shell

import (
	"context"
	"encoding/pem"
	"errors"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/commands/netguard"
	"github.com/agentd/agentd/internal/netguardtest"
)

// TestCloneGoesThroughTheGuard shows that git reaches the network only through the guard:
// a name that resolves to loopback clones when the guard's test hook admits the server's
// address, and is refused at dial time otherwise, with the server never reached, though
// git (curl) on its own would resolve localhost and connect. Proxy variables the daemon
// passes on cannot steer git around it.
func TestCloneGoesThroughTheGuard(t *testing.T) {
	base, _, hits := gitServer(t)
	target := netip.MustParseAddrPort(strings.TrimPrefix(base, "http://"))
	u := "http://localhost:" + strconv.Itoa(int(target.Port())) + "/repo.git"

	t.Run("admitted_by_the_guard", func(t *testing.T) {
		c := newClone(t, Options{})
		var mu sync.Mutex
		var seen []netip.AddrPort
		tripwire := c.guard.BeforeConnect
		c.guard.Exempt = func(ap netip.AddrPort) bool { return ap == target }
		c.guard.BeforeConnect = func(ap netip.AddrPort) error {
			mu.Lock()
			seen = append(seen, ap)
			mu.Unlock()
			return tripwire(ap)
		}
		ws := workspace(t)
		out, err := run(context.Background(), t, c, ws, cloneArgs(u, "r"), time.Minute)
		if err != nil || !strings.Contains(out, "Cloned "+u) {
			t.Fatalf("clone: %q, %v", out, err)
		}
		if _, err := os.Stat(filepath.Join(ws, "r", "README.md")); err != nil {
			t.Errorf("no README in the clone: %v", err)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(seen) == 0 || seen[0] != target {
			t.Errorf("the guard dialled %v, want %v: git did not go through it", seen, target)
		}
	})

	for _, name := range []string{"http_proxy", "HTTP_PROXY", "no_proxy", "NO_PROXY", "ALL_PROXY", "GIT_CONFIG_PARAMETERS"} {
		t.Setenv(name, map[bool]string{true: "'http.proxy'=''", false: "*"}[strings.HasPrefix(name, "GIT_")])
	}
	passed := []string{"http_proxy", "HTTP_PROXY", "no_proxy", "NO_PROXY", "ALL_PROXY", "GIT_CONFIG_PARAMETERS"}
	for _, o := range []Options{{}, {PassEnv: passed}} {
		t.Run("refused_at_dial_time_pass_env_"+strconv.Itoa(len(o.PassEnv)), func(t *testing.T) {
			before := hits.Load()
			_, err := run(context.Background(), t, newClone(t, o), workspace(t), cloneArgs(u, "r"), time.Minute)
			var be *netguard.BlockedError
			if !errors.Is(err, ErrURLRefused) || !errors.As(err, &be) || be.Kind != "loopback" {
				t.Fatalf("error %v; want a loopback refusal", err)
			}
			for _, want := range []string{"localhost resolves to 127.0.0.1, a loopback address", "allow_private"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
			if n := hits.Load() - before; n != 0 {
				t.Errorf("the git server got %d requests: git went around the guard", n)
			}
		})
	}
}

// TestCloneHTTPSTunnels: an https clone goes through the proxy's CONNECT tunnel, on the
// address the guard checked.
func TestCloneHTTPSTunnels(t *testing.T) {
	srv, _, _ := serveGit(t, true)
	target := netip.MustParseAddrPort(srv.Listener.Addr().String())
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	c := newClone(t, Options{})
	c.testConfig = []string{"-c", "http.sslCAInfo=" + ca}
	var mu sync.Mutex
	var seen []netip.AddrPort
	c.guard.Exempt = func(ap netip.AddrPort) bool { return ap == target }
	c.guard.BeforeConnect = func(ap netip.AddrPort) error {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, ap)
		return nil
	}
	ws := workspace(t)
	out, err := run(context.Background(), t, c, ws, cloneArgs(srv.URL+"/repo.git", "r"), time.Minute)
	if err != nil || !strings.Contains(out, "Top level: README.md, cmd/") {
		t.Fatalf("https clone: %q, %v", out, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) == 0 || seen[0] != target {
		t.Errorf("the guard dialled %v, want %v: git did not tunnel through it", seen, target)
	}
}

func TestGitEnv(t *testing.T) {
	in := []string{"PATH=/usr/bin", "HOME=/ws", "http_proxy=x", "HTTPS_PROXY=x", "all_proxy=x", "No_Proxy=x",
		"GIT_CONFIG_COUNT=1", "git_dir=x", "GOPROXY=https://proxy.golang.org", "LANG=C.UTF-8"}
	got := strings.Join(gitEnv(in), " ")
	if want := "PATH=/usr/bin HOME=/ws GOPROXY=https://proxy.golang.org LANG=C.UTF-8"; got != want {
		t.Errorf("gitEnv = %q, want %q", got, want)
	}
}

// TestCloneCorpus runs the shared address corpus through clone_repository. Addresses in
// any form are refused before git starts (a fake git records any start); host names are
// refused when git's connection is dialled, and the git server is never reached.
func TestCloneCorpus(t *testing.T) {
	base, _, hits := gitServer(t)
	port := strconv.Itoa(int(netip.MustParseAddrPort(strings.TrimPrefix(base, "http://")).Port()))
	dir := t.TempDir()
	marker := filepath.Join(dir, "git-ran")
	fakeGit := filepath.Join(dir, "git")
	if err := os.WriteFile(fakeGit, []byte("#!/bin/sh\necho \"$@\" >> "+marker+"\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range netguardtest.Corpus(port) {
		t.Run(tc.Name, func(t *testing.T) {
			o := Options{Git: fakeGit}
			if tc.IsName {
				o.Git = "" // the real git, through the proxy
			}
			before := hits.Load()
			out, err := run(context.Background(), t, newClone(t, o), workspace(t), cloneArgs(tc.URL, "r"), time.Minute)
			if err == nil {
				t.Fatalf("clone %s = %q, want a refusal", tc.URL, out)
			}
			if !errors.Is(err, ErrURLRefused) {
				t.Errorf("error %v is not ErrURLRefused", err)
			}
			if b, err := os.ReadFile(marker); err == nil {
				os.Remove(marker)
				t.Fatalf("git started (%s) for a URL the guard refuses before", strings.TrimSpace(string(b)))
			}
			if n := hits.Load() - before; n != 0 {
				t.Fatalf("the git server got %d requests", n)
			}
			checkCloneRefusal(t, err, tc)
		})
	}
}

// checkCloneRefusal: a guard refusal names the row's kind; a URL the guard never saw was
// refused for what clone_repository refuses in any URL (credentials, a query or fragment,
// no URL at all) or for being no host the guard can read.
func checkCloneRefusal(t *testing.T, err error, tc netguardtest.Case) {
	t.Helper()
	var be *netguard.BlockedError
	if errors.As(err, &be) {
		if be.Kind != tc.Kind {
			t.Errorf("kind %q, want %q (%v)", be.Kind, tc.Kind, err)
		}
		if !strings.Contains(err.Error(), "allow_private") {
			t.Errorf("error %q does not say how to allow it", err)
		}
		return
	}
	u, perr := url.Parse(tc.URL)
	before := perr != nil || u.User != nil || u.Fragment != "" || strings.ContainsAny(tc.URL, "?#")
	if !before && !errors.Is(err, netguard.ErrBadHost) {
		t.Errorf("error %v; want the guard's refusal (%q)", err, tc.Kind)
	}
}
