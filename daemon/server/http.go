package server

import (
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/daemon/config"
	"github.com/agentd/agentd/daemon/localapi"
)

// minTokenLen keeps guessable tokens off a listener that can approve commands.
const minTokenLen = 16

// tcpHandler serves the optional TCP listener ([http]): /metrics and the Agent Protocol,
// both only with the bearer token (metrics name the agents), and only to requests that
// name this listener in Host and come from no other web origin, so a web page the
// person visits cannot reach it through DNS rebinding.
type tcpHandler struct {
	// Metrics serves /metrics; nil answers 404. The Prometheus handler plugs in here.
	Metrics http.Handler
	// AgentProtocol serves /ap/v1/; nil (agent_protocol = false) answers 404.
	AgentProtocol http.Handler
	// tokenHash is compared, not the token: equal-length hashes make the comparison
	// constant time whatever the length of what was sent.
	tokenHash [sha256.Size]byte
	hosts     localapi.HostGuard
	log       *slog.Logger
}

// newTCPHandler makes the handler for the listener bound at addr, configured as listen.
func newTCPHandler(token string, addr net.Addr, listen string, log *slog.Logger) *tcpHandler {
	hosts := localapi.NewHostGuard(addr, listen)
	hosts.Name = "this listener (for Prometheus and Agent Protocol clients, not browsers)"
	hosts.Reach = "127.0.0.1:" + hosts.Port() + " or localhost:" + hosts.Port()
	return &tcpHandler{tokenHash: sha256.Sum256([]byte(token)), hosts: hosts, log: log}
}

func (h *tcpHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if status, msg := h.hosts.Refuse(r); status != 0 {
		h.log.Debug("http: refused", "method", r.Method, "host", r.Host, "origin", r.Header.Get("Origin"), "remote", r.RemoteAddr, "why", msg)
		tcpError(w, status, msg)
		return
	}
	if msg := h.checkToken(r); msg != "" {
		h.log.Debug("http: refused", "method", r.Method, "path", r.URL.Path, "remote", r.RemoteAddr, "why", msg)
		w.Header().Set("WWW-Authenticate", `Bearer realm="agentd"`)
		tcpError(w, http.StatusUnauthorized, msg)
		return
	}
	if r.URL.Path == "/metrics" {
		if h.Metrics == nil {
			tcpError(w, http.StatusNotFound, "metrics are not served by this daemon")
			return
		}
		h.Metrics.ServeHTTP(w, r)
		return
	}
	if r.URL.Path == "/ap/v1" || strings.HasPrefix(r.URL.Path, "/ap/v1/") {
		if h.AgentProtocol == nil {
			tcpError(w, http.StatusNotFound, "the Agent Protocol is off: set agent_protocol = true in [http]")
			return
		}
		h.AgentProtocol.ServeHTTP(w, r)
		return
	}
	tcpError(w, http.StatusNotFound, fmt.Sprintf("no such endpoint: %s %s (this listener serves /metrics and /ap/v1/)", r.Method, r.URL.Path))
}

// checkToken returns why r's bearer token is refused, or "".
func (h *tcpHandler) checkToken(r *http.Request) string {
	auth := r.Header.Get("Authorization")
	if auth == "" {
		return "missing bearer token: send the header Authorization: Bearer <token> ([http] token_env or token_file)"
	}
	scheme, tok, ok := strings.Cut(auth, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "the Authorization header is not a bearer token: send Authorization: Bearer <token>"
	}
	got := sha256.Sum256([]byte(strings.TrimSpace(tok)))
	if subtle.ConstantTimeCompare(got[:], h.tokenHash[:]) != 1 {
		return "wrong bearer token"
	}
	return ""
}

func tcpError(w http.ResponseWriter, status int, msg string) {
	localapi.Reply(w, status, api.ErrorResponse{Error: msg})
}

// httpToken reads the listener's bearer token. Errors say where it was looked for,
// never what was found.
func httpToken(h config.HTTPConfig) (string, error) {
	sec := httpSecret(h)
	tok, err := sec.read()
	if err == nil {
		err = checkHTTPToken(tok)
	}
	if err != nil {
		return "", fmt.Errorf("%w: %s", err, sec.fix())
	}
	return tok, nil
}

// checkHTTPToken refuses a token too short to guard agent control.
func checkHTTPToken(tok string) error {
	if len(tok) < minTokenLen {
		return fmt.Errorf("http token: %d characters is too short to guard agent control: use at least %d", len(tok), minTokenLen)
	}
	return nil
}

// listenTCP binds [http] listen, or returns nil when the listener is off. Config
// validation refused a non-loopback address unless allow_remote; this checks again
// after resolving, because "localhost" could resolve anywhere.
func listenTCP(h config.HTTPConfig) (net.Listener, error) {
	if h.Listen == "" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", h.Listen)
	if err != nil {
		return nil, fmt.Errorf("http listener: %w", err)
	}
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok && !h.AllowRemote && !tcp.IP.IsLoopback() {
		ln.Close()
		return nil, fmt.Errorf("http listener: %s bound %s, which is not loopback; set allow_remote = true if that is meant", h.Listen, tcp)
	}
	return ln, nil
}
