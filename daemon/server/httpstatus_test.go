package server

import (
	"context"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agentd/agentd/api"
)

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
			st, err := (&api.Client{Socket: cfg.Socket}).Status(context.Background())
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
	rep, err := (&api.Client{Socket: cfg.Socket}).Doctor(context.Background())
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
