package server

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/daemon/config"
	"github.com/agentd/agentd/internal/ollamatest"
	"github.com/agentd/agentd/internal/testutil"
)

const testToken = "0123456789abcdef-test-token"

// errorBody decodes a {"error": "..."} reply, failing the test for anything else.
func errorBody(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q, want application/json", ct)
	}
	var e struct {
		Error string `json:"error"`
	}
	if err := json.Unmarshal(raw, &e); err != nil || e.Error == "" {
		t.Fatalf("body %s is not {\"error\": \"...\"}", raw)
	}
	return e.Error
}

func TestTCPHandler(t *testing.T) {
	h := newTCPHandler(testToken, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 7070}, "127.0.0.1:7070", slog.New(slog.DiscardHandler))
	reached := ""
	mark := func(name string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { reached = name; w.WriteHeader(204) })
	}
	tests := []struct {
		name, path, auth   string
		metrics, ap        bool
		status             int
		reached, errSubstr string
	}{
		{"metrics_without_token", "/metrics", "", true, true, 401, "", "missing bearer token"},
		{"metrics_wrong_token", "/metrics", "Bearer " + testToken + "x", true, true, 401, "", "wrong bearer token"},
		{"metrics_right_token", "/metrics", "Bearer " + testToken, true, true, 204, "metrics", ""},
		{"metrics_slot_empty", "/metrics", "Bearer " + testToken, false, true, 404, "", "metrics are not served"},
		{"ap_without_token", "/ap/v1/agent/tasks", "", true, true, 401, "", "missing bearer token"},
		{"ap_wrong_token", "/ap/v1/agent/tasks", "Bearer " + testToken + "x", true, true, 401, "", "wrong bearer token"},
		{"ap_token_prefix", "/ap/v1/agent/tasks", "Bearer " + testToken[:10], true, true, 401, "", "wrong bearer token"},
		{"ap_basic_auth", "/ap/v1/agent/tasks", "Basic dXNlcjpwYXNz", true, true, 401, "", "not a bearer token"},
		{"ap_right_token", "/ap/v1/agent/tasks", "Bearer " + testToken, true, true, 204, "ap", ""},
		{"ap_scheme_any_case", "/ap/v1/agent/tasks", "bearer " + testToken, true, true, 204, "ap", ""},
		{"ap_off", "/ap/v1/agent/tasks", "Bearer " + testToken, true, false, 404, "", "agent_protocol = true"},
		{"other_path_needs_token", "/v0/agents", "", true, true, 401, "", "missing bearer token"},
		{"other_path_with_token", "/v0/agents", "Bearer " + testToken, true, true, 404, "", "no such endpoint"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h.Metrics, h.AgentProtocol, reached = nil, nil, ""
			if tt.metrics {
				h.Metrics = mark("metrics")
			}
			if tt.ap {
				h.AgentProtocol = mark("ap")
			}
			r := httptest.NewRequest("GET", tt.path, nil)
			r.Host = "127.0.0.1:7070"
			if tt.auth != "" {
				r.Header.Set("Authorization", tt.auth)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tt.status || reached != tt.reached {
				t.Fatalf("status %d reached %q, want %d %q; body %s", w.Code, reached, tt.status, tt.reached, w.Body)
			}
			if tt.status == 401 && w.Header().Get("WWW-Authenticate") == "" {
				t.Error("401 without WWW-Authenticate")
			}
			if tt.errSubstr != "" {
				if msg := errorBody(t, w.Result()); !strings.Contains(msg, tt.errSubstr) {
					t.Errorf("error %q does not say %q", msg, tt.errSubstr)
				}
			}
		})
	}
}

// TestTCPHandlerRefusesOtherHostsAndOrigins: a request naming another host (DNS
// rebinding) or sent by a web page is refused, with the right token and before it.
func TestTCPHandlerRefusesOtherHostsAndOrigins(t *testing.T) {
	tests := []struct {
		name, bound, listen, host, origin, fetchSite string
		status                                       int
	}{
		{"loopback_ip", "127.0.0.1:7070", "127.0.0.1:7070", "127.0.0.1:7070", "", "", 204},
		{"localhost", "127.0.0.1:7070", "127.0.0.1:7070", "localhost:7070", "", "", 204},
		{"localhost_any_case", "127.0.0.1:7070", "127.0.0.1:7070", "LocalHost:7070", "", "", 204},
		{"localhost_trailing_dot", "127.0.0.1:7070", "127.0.0.1:7070", "LocalHost.:7070", "", "", 421},
		{"ipv6_loopback", "[::1]:7070", "[::1]:7070", "[::1]:7070", "", "", 204},
		{"configured_name", "127.0.0.1:7070", "metrics.internal:7070", "metrics.internal:7070", "", "", 204},
		{"any_address_by_ip", "0.0.0.0:7070", "0.0.0.0:7070", "192.168.1.20:7070", "", "", 204},
		{"same_origin", "127.0.0.1:7070", "127.0.0.1:7070", "127.0.0.1:7070", "http://127.0.0.1:7070", "same-origin", 204},
		{"rebinding_name", "127.0.0.1:7070", "127.0.0.1:7070", "attacker.example:7070", "", "", 421},
		{"rebinding_name_any_address", "0.0.0.0:7070", "0.0.0.0:7070", "attacker.example:7070", "", "", 421},
		{"other_port", "127.0.0.1:7070", "127.0.0.1:7070", "127.0.0.1:8080", "", "", 421},
		{"no_port", "127.0.0.1:7070", "127.0.0.1:7070", "localhost", "", "", 421},
		{"empty_host", "127.0.0.1:7070", "127.0.0.1:7070", "", "", "", 421},
		{"foreign_origin", "127.0.0.1:7070", "127.0.0.1:7070", "127.0.0.1:7070", "http://attacker.example", "", 403},
		{"null_origin", "127.0.0.1:7070", "127.0.0.1:7070", "127.0.0.1:7070", "null", "", 403},
		{"https_origin_same_host", "127.0.0.1:7070", "127.0.0.1:7070", "127.0.0.1:7070", "https://127.0.0.1:7070", "", 403},
		{"cross_site_fetch", "127.0.0.1:7070", "127.0.0.1:7070", "127.0.0.1:7070", "", "cross-site", 403},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			addr, err := net.ResolveTCPAddr("tcp", tt.bound)
			if err != nil {
				t.Fatal(err)
			}
			h := newTCPHandler(testToken, addr, tt.listen, slog.New(slog.DiscardHandler))
			reached := false
			h.Metrics = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { reached = true; w.WriteHeader(204) })
			r := httptest.NewRequest("GET", "/metrics", nil)
			r.Host = tt.host
			r.Header.Set("Authorization", "Bearer "+testToken)
			if tt.origin != "" {
				r.Header.Set("Origin", tt.origin)
			}
			if tt.fetchSite != "" {
				r.Header.Set("Sec-Fetch-Site", tt.fetchSite)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tt.status || reached != (tt.status == 204) {
				t.Fatalf("status %d (reached %v), want %d; body %s", w.Code, reached, tt.status, w.Body)
			}
			if tt.status != 204 {
				if msg := errorBody(t, w.Result()); !strings.Contains(msg, "refused") {
					t.Errorf("error %q does not say it refused", msg)
				}
			}
		})
	}
}

func httpTestConfig(t *testing.T) *config.Config {
	model := ollamatest.NewFake(t)
	cfg := testConfig(t, model, "http://127.0.0.1:1/api/")
	cfg.Slack.Enabled = false
	cfg.HTTP.Listen = testutil.FreeAddr(t)
	cfg.HTTP.TokenFile = filepath.Join(t.TempDir(), "token")
	os.WriteFile(cfg.HTTP.TokenFile, []byte(testToken+"\n"), 0o600)
	return cfg
}

func TestListenerRunsWithTheDaemon(t *testing.T) {
	cfg := httpTestConfig(t)
	cfg.HTTP.AgentProtocol = false
	logs := &testutil.SyncBuffer{}
	stop := runDaemon(t, cfg, slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	base := "http://" + cfg.HTTP.Listen

	resp, err := http.Get(base + "/ap/v1/agent/tasks")
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 401 {
		t.Errorf("no token: status %d, want 401", resp.StatusCode)
	}
	errorBody(t, resp)
	req, _ := http.NewRequest("GET", base+"/ap/v1/agent/tasks", nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	if resp, err = http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 404 || !strings.Contains(errorBody(t, resp), "agent_protocol") {
		t.Errorf("agent_protocol off: status %d, want 404", resp.StatusCode)
	}
	if resp, err = http.Get(base + "/metrics"); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 401 {
		t.Errorf("metrics without a token: status %d, want 401", resp.StatusCode)
	}
	errorBody(t, resp)
	req, _ = http.NewRequest("GET", base+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	if resp, err = http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "agentd_") {
		t.Errorf("metrics with the token: status %d, body %.200s", resp.StatusCode, body)
	}
	req, _ = http.NewRequest("GET", base+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Host = "rebound.example" + cfg.HTTP.Listen[strings.LastIndex(cfg.HTTP.Listen, ":"):]
	if resp, err = http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusMisdirectedRequest {
		t.Errorf("a rebound Host: status %d, want 421", resp.StatusCode)
	}
	errorBody(t, resp)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := http.Get(base + "/metrics"); err == nil {
		t.Error("the listener still answers after the daemon stopped")
	}
	if !strings.Contains(logs.String(), "http listener ready") {
		t.Errorf("no ready line logged:\n%s", logs)
	}
	if strings.Contains(logs.String(), testToken) {
		t.Error("the http token is in the daemon's logs")
	}
}

func TestListenerTokenProblems(t *testing.T) {
	tests := []struct {
		name, env, file, want string
	}{
		{"env_unset", "", "", "$AGENTD_HTTP_TOKEN is not set"},
		{"too_short", "short-token", "", "too short"},
		{"file_missing", "", "/nonexistent/agentd-token", "/nonexistent/agentd-token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := httpTestConfig(t)
			cfg.HTTP.TokenFile = tt.file
			t.Setenv("AGENTD_HTTP_TOKEN", tt.env)
			err := Run(context.Background(), cfg, slog.New(slog.DiscardHandler), Options{Version: "test"})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Run = %v, want an error saying %q", err, tt.want)
			}
			if tt.env != "" && strings.Contains(err.Error(), tt.env) {
				t.Error("the error shows the token")
			}
		})
	}
}

func TestListenerAddressInUse(t *testing.T) {
	cfg := httpTestConfig(t)
	ln, err := net.Listen("tcp", cfg.HTTP.Listen)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	err = Run(context.Background(), cfg, slog.New(slog.DiscardHandler), Options{Version: "test"})
	if err == nil || !strings.Contains(err.Error(), "http listener") {
		t.Fatalf("Run = %v, want an http listener error", err)
	}
}

// TestStatusShowsTheListener asks a running daemon for its status over the socket: the
// address shown is the one bound (port 0 in the config becomes the chosen port).
func TestStatusShowsTheListener(t *testing.T) {
	tests := []struct {
		name          string
		listen        string
		agentProtocol bool
	}{
		{"off", "", true},
		{"metrics_only", "127.0.0.1:0", false},
		{"metrics_and_agent_protocol", "127.0.0.1:0", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := httpTestConfig(t)
			cfg.HTTP.Listen, cfg.HTTP.AgentProtocol = tt.listen, tt.agentProtocol
			stop := runDaemon(t, cfg, slog.New(slog.DiscardHandler))
			defer stop()
			st, err := api.StatusRoute.Do(context.Background(), &api.Client{Socket: cfg.Socket}, "", api.None{})
			if err != nil {
				t.Fatal(err)
			}
			h := st.HTTP
			if tt.listen == "" {
				if h != (api.HTTPStatus{}) {
					t.Fatalf("listener off, status %+v", h)
				}
				return
			}
			host, port, err := net.SplitHostPort(h.Addr)
			if p, _ := strconv.Atoi(port); err != nil || host != "127.0.0.1" || p == 0 {
				t.Fatalf("addr %q, want 127.0.0.1 and the port bound", h.Addr)
			}
			if !h.Listening || !h.Metrics || h.AgentProtocol != tt.agentProtocol || h.Remote {
				t.Fatalf("status %+v, want listening, metrics, agent_protocol %v, not remote", h, tt.agentProtocol)
			}
			conn, err := net.Dial("tcp", h.Addr)
			if err != nil {
				t.Fatalf("the address shown does not answer: %v", err)
			}
			conn.Close()
		})
	}
}

func TestHTTPServes(t *testing.T) {
	if got := httpServes(api.HTTPStatus{Metrics: true, AgentProtocol: true}); got != "metrics, agent protocol" {
		t.Errorf("httpServes = %q", got)
	}
	if got := httpServes(api.HTTPStatus{Metrics: true}); !strings.Contains(got, "metrics") || strings.Contains(got, "agent") {
		t.Errorf("httpServes = %q", got)
	}
}

// longToken is long enough for doctor not to warn.
const longToken = "0123456789abcdef0123456789abcdef-long"

// boundListener is an httpListener bound to a fresh loopback listener with token, as
// Run fills it; the listener closes with the test.
func boundListener(t *testing.T, token string) (*httpListener, net.Listener) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	l := &httpListener{}
	l.cfg.TokenEnv = "AGENTD_HTTP_TOKEN"
	l.bound(ln, token)
	return l, ln
}

func TestDoctorChecksTheListener(t *testing.T) {
	tests := []struct {
		name string
		// setup changes what was bound; nil leaves a loopback listener that answers.
		setup          func(t *testing.T, l *httpListener, ln net.Listener)
		status, detail string
		fix            string
	}{
		{"loopback_answers", nil, api.CheckOK, "listening on 127.0.0.1:", ""},
		{"stopped_answering", func(t *testing.T, l *httpListener, ln net.Listener) { ln.Close() },
			api.CheckFail, "does not answer", "restart agentd"},
		{"every_interface", func(t *testing.T, l *httpListener, ln net.Listener) {
			// Shown as bound on 0.0.0.0 without binding it: the check dials loopback.
			l.addr = &net.TCPAddr{IP: net.IPv4zero, Port: l.addr.Port}
		}, api.CheckWarn, "reachable from other machines", "TLS proxy"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, ln := boundListener(t, longToken)
			if tt.setup != nil {
				tt.setup(t, l, ln)
			}
			c := l.listenCheck(context.Background())
			if c.Name != "http" || c.Status != tt.status || !strings.Contains(c.Detail, tt.detail) || !strings.Contains(c.Fix, tt.fix) {
				t.Fatalf("check %+v, want %s with %q, fix %q", c, tt.status, tt.detail, tt.fix)
			}
			if tt.fix == "" && c.Fix != "" {
				t.Errorf("an ok check with a fix: %q", c.Fix)
			}
		})
	}
}

func TestDoctorChecksTheToken(t *testing.T) {
	tests := []struct {
		name string
		// file is the token file's content and mode; "" reads $AGENTD_HTTP_TOKEN (env).
		file, env string
		mode      os.FileMode
		status    string
		detail    string
		fix       string
	}{
		{"file_private", longToken, "", 0o600, api.CheckOK, "(mode 0600)", ""},
		{"file_read_only", longToken, "", 0o400, api.CheckOK, "(mode 0400)", ""},
		{"file_group_readable", longToken, "", 0o640, api.CheckFail, "mode 0640", "chmod 600 "},
		{"file_world_readable", longToken, "", 0o644, api.CheckFail, "mode 0644", "chmod 600 "},
		{"file_short", longToken[:20], "", 0o600, api.CheckWarn, "20 characters: use at least 32", "openssl rand -hex 32 > "},
		{"file_too_short", longToken[:10], "", 0o600, api.CheckFail, "10 characters", "openssl rand"},
		{"file_rewritten", strings.ToUpper(longToken), "", 0o600, api.CheckWarn, "changed since agentd started", "restart agentd"},
		{"file_empty", "\n", "", 0o600, api.CheckFail, "is empty", "openssl rand"},
		{"env_long", "", longToken, 0, api.CheckOK, "$AGENTD_HTTP_TOKEN", ""},
		{"env_short", "", longToken[:20], 0, api.CheckWarn, "$AGENTD_HTTP_TOKEN is 20 characters", "set AGENTD_HTTP_TOKEN"},
		{"env_unset", "", "", 0, api.CheckFail, "$AGENTD_HTTP_TOKEN is not set", "set AGENTD_HTTP_TOKEN"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			started := longToken // the token the listener took at start
			if tt.name == "file_short" || tt.name == "env_short" {
				started = longToken[:20]
			}
			l, _ := boundListener(t, started)
			t.Setenv("AGENTD_HTTP_TOKEN", tt.env)
			if tt.file != "" {
				l.cfg.TokenFile = filepath.Join(t.TempDir(), "token")
				if err := os.WriteFile(l.cfg.TokenFile, []byte(tt.file), tt.mode); err != nil {
					t.Fatal(err)
				}
				os.Chmod(l.cfg.TokenFile, tt.mode) // past the umask
			}
			c := l.tokenCheck()
			if c.Name != "http token" || c.Status != tt.status || !strings.Contains(c.Detail, tt.detail) || !strings.Contains(c.Fix, tt.fix) {
				t.Fatalf("check %+v, want %s with %q, fix %q", c, tt.status, tt.detail, tt.fix)
			}
			if tt.fix == "" && c.Fix != "" {
				t.Errorf("an ok check with a fix: %q", c.Fix)
			}
			if strings.HasPrefix(c.Fix, "chmod") && !strings.HasSuffix(c.Fix, l.cfg.TokenFile) {
				t.Errorf("fix %q does not name the file", c.Fix)
			}
			for _, tok := range []string{tt.file, tt.env} {
				if len(strings.TrimSpace(tok)) >= 10 && strings.Contains(c.Detail+c.Fix, strings.TrimSpace(tok)) {
					t.Errorf("the check shows the token: %+v", c)
				}
			}
		})
	}
}

// TestDoctorWithTheListenerOff: nothing to check unless agent_protocol asks for a
// listener that is off.
func TestDoctorWithTheListenerOff(t *testing.T) {
	l := &httpListener{}
	if got := l.check(context.Background()); len(got) != 0 {
		t.Errorf("listener off: checks %+v, want none", got)
	}
	l.cfg.AgentProtocol = true
	got := l.check(context.Background())
	if len(got) != 1 || got[0].Status != api.CheckWarn || !strings.Contains(got[0].Fix, "listen") {
		t.Errorf("agent_protocol without listen: checks %+v, want one warning naming listen", got)
	}
}

// TestDoctorOverTheSocket runs agentctl doctor's daemon side: the listener's checks are
// in the report.
func TestDoctorOverTheSocket(t *testing.T) {
	cfg := httpTestConfig(t)
	cfg.HTTP.Listen = "127.0.0.1:0"
	os.WriteFile(cfg.HTTP.TokenFile, []byte(longToken), 0o600)
	stop := runDaemon(t, cfg, slog.New(slog.DiscardHandler))
	defer stop()
	os.Chmod(cfg.HTTP.TokenFile, 0o644) // someone loosened it after the start
	rep, err := api.DoctorRoute.Do(context.Background(), &api.Client{Socket: cfg.Socket}, "", api.None{})
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]api.Check{}
	for _, c := range rep.Checks {
		found[c.Name] = c
	}
	if c := found["http"]; c.Status != api.CheckOK || !strings.Contains(c.Detail, "127.0.0.1:") {
		t.Errorf("http check %+v, want ok naming the address", c)
	}
	if c := found["http token"]; c.Status != api.CheckFail || c.Fix != "chmod 600 "+cfg.HTTP.TokenFile {
		t.Errorf("http token check %+v, want a failure fixed by chmod 600", c)
	}
}
