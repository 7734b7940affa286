package server

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/cookiejar"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/daemon/config"
	"github.com/agentd/agentd/internal/ollamatest"
	"github.com/agentd/agentd/internal/testutil"
)

// consoleDaemon runs a daemon, stopped when the test ends, whose web console listens on a
// free loopback address: from the start when enabled, else once agentctl web asks.
func consoleDaemon(t *testing.T, enabled bool) *config.Config {
	cfg := testConfig(t, ollamatest.NewFake(t), "http://127.0.0.1:1/api/")
	cfg.Slack.Enabled = false
	cfg.WebConsole.Enabled, cfg.WebConsole.Listen = enabled, testutil.FreeAddr(t)
	stop := runDaemon(t, cfg, slog.New(slog.DiscardHandler))
	t.Cleanup(func() { stop() })
	return cfg
}

// TestWebConsoleOffUntilAsked: by default nothing listens on [web_console] listen;
// agentctl web's call starts the console there and its login URL logs a browser in once.
func TestWebConsoleOffUntilAsked(t *testing.T) {
	cfg := consoleDaemon(t, false)

	if c, err := net.DialTimeout("tcp", cfg.WebConsole.Listen, time.Second); err == nil {
		c.Close()
		t.Fatalf("the console listens on %s though [web_console] is off", cfg.WebConsole.Listen)
	}
	c := &api.Client{Socket: cfg.Socket}
	if st, err := api.StatusRoute.Do(context.Background(), c, "", api.None{}); err != nil || st.Web.URL != "" {
		t.Fatalf("status says the console serves before agentctl web: %+v, %v", st, err)
	}
	login, err := api.WebLoginRoute.Do(context.Background(), c, "", api.None{})
	if err != nil {
		t.Fatal(err)
	}
	if st, err := api.StatusRoute.Do(context.Background(), c, "", api.None{}); err != nil || st.Web.URL != login.URL {
		t.Fatalf("status: %+v, %v; want the console at %s", st, err, login.URL)
	}
	if login.URL != "http://"+cfg.WebConsole.Listen+"/" || !strings.HasPrefix(login.LoginURL, login.URL+"login?token=") {
		t.Fatalf("login %+v, want the console on %s", login, cfg.WebConsole.Listen)
	}
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar}
	for i, want := range []int{http.StatusOK, http.StatusUnauthorized} { // the token works once
		resp, err := hc.Get(login.LoginURL)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Fatalf("login %d: status %d, want %d:\n%s", i, resp.StatusCode, want, body)
		}
	}
	again, err := api.WebLoginRoute.Do(context.Background(), &api.Client{Socket: cfg.Socket}, "", api.None{})
	if err != nil || again.URL != login.URL || again.LoginURL == login.LoginURL {
		t.Fatalf("a second agentctl web: %+v, %v; want the same console and a new token", again, err)
	}
}

// TestWebConsoleEnabled: [web_console] enabled serves it from the start.
func TestWebConsoleEnabled(t *testing.T) {
	cfg := consoleDaemon(t, true)
	resp, err := http.Get("http://" + cfg.WebConsole.Listen + "/")
	if err != nil {
		t.Fatalf("the enabled console does not listen: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("no session: %d, want 401", resp.StatusCode)
	}
}

// agentctl web logout ends every console session through the socket: the logged-in
// browser is logged out, and a login URL not used yet no longer works.
func TestWebLogoutEndsEverySession(t *testing.T) {
	cfg := consoleDaemon(t, false)
	c := &api.Client{Socket: cfg.Socket}
	used, err := api.WebLoginRoute.Do(context.Background(), c, "", api.None{})
	if err != nil {
		t.Fatal(err)
	}
	unused, err := api.WebLoginRoute.Do(context.Background(), c, "", api.None{})
	if err != nil {
		t.Fatal(err)
	}
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar}
	get := func(u string) int {
		resp, err := hc.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := get(used.LoginURL); code != http.StatusOK {
		t.Fatalf("login: %d", code)
	}
	out, err := api.WebLogoutRoute.Do(context.Background(), c, "", api.None{})
	if err != nil || out.Sessions != 1 {
		t.Fatalf("web logout: %+v, %v; want 1 session ended", out, err)
	}
	if code := get(used.URL); code != http.StatusUnauthorized {
		t.Errorf("the browser's page after web logout: %d, want 401", code)
	}
	if code := get(unused.LoginURL); code != http.StatusUnauthorized {
		t.Errorf("a login URL minted before web logout: %d, want 401", code)
	}
}
