package server

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/daemon/agent"
	"github.com/agentd/agentd/daemon/config"
)

// goodTokenLen is the token length doctor stops warning at: 16 characters pass the start
// check (minTokenLen), but `openssl rand -hex 16` already gives 32.
const goodTokenLen = 32

// httpListener is what agentctl status and doctor know of the TCP listener ([http]). A
// change to [http] needs a restart, so it is filled once, when the listener is bound,
// before the API serves anyone.
type httpListener struct {
	cfg           config.HTTPConfig
	addr          *net.TCPAddr // nil while the listener is off
	agentProtocol bool
	// tokenHash is the hash of the token the listener takes, so doctor can tell a token
	// file rewritten since the start without keeping the token itself.
	tokenHash [sha256.Size]byte
}

// bound records the listener ln (nil when off) and the token it takes.
func (l *httpListener) bound(ln net.Listener, token string) {
	if ln == nil {
		return
	}
	l.addr, _ = ln.Addr().(*net.TCPAddr)
	l.agentProtocol = l.cfg.AgentProtocol
	l.tokenHash = sha256.Sum256([]byte(token))
}

// status is the listener for agentctl status.
func (l *httpListener) status() api.HTTPStatus {
	if l == nil || l.addr == nil {
		return api.HTTPStatus{}
	}
	return api.HTTPStatus{Listening: true, Addr: l.addr.String(), Metrics: true, AgentProtocol: l.agentProtocol,
		Remote: !l.addr.IP.IsLoopback()}
}

// check is agentctl doctor's check of the listener: that it answers and where, and
// that its token is private and long enough. Nothing when the listener is off and
// nothing asked for it.
func (l *httpListener) check(ctx context.Context) []api.Check {
	if l.addr == nil {
		if l.cfg.AgentProtocol {
			return []api.Check{{Name: "http", Status: api.CheckWarn,
				Detail: "agent_protocol = true, but the listener is off: nothing serves the Agent Protocol",
				Fix:    `set listen = "127.0.0.1:7070" in [http] and restart agentd`}}
		}
		return nil
	}
	return []api.Check{l.listenCheck(ctx), l.tokenCheck()}
}

var _ agent.HealthCheck = (*httpListener)(nil).check

// listenCheck dials the bound address: a listener that stopped answering is a failure,
// one other machines can reach a warning.
func (l *httpListener) listenCheck(ctx context.Context) api.Check {
	st := l.status()
	c := api.Check{Name: "http", Status: api.CheckOK, Detail: "listening on " + st.Addr + " (" + httpServes(st) + ")"}
	dial := *l.addr
	if dial.IP.IsUnspecified() { // 0.0.0.0 or [::]: this machine reaches it on loopback
		dial.IP = net.IPv4(127, 0, 0, 1)
		if l.addr.IP.To4() == nil {
			dial.IP = net.IPv6loopback
		}
	}
	dctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	conn, err := (&net.Dialer{}).DialContext(dctx, "tcp", dial.String())
	if err != nil {
		c.Status, c.Detail = api.CheckFail, "bound "+st.Addr+" but does not answer: "+err.Error()
		c.Fix = "see the daemon's log (journalctl --user -u agentd) and restart agentd"
		return c
	}
	conn.Close()
	if st.Remote {
		c.Status = api.CheckWarn
		c.Detail += ", reachable from other machines (allow_remote = true): the bearer token travels in clear text"
		c.Fix = fmt.Sprintf("put a TLS proxy in front and have it reach listen = \"127.0.0.1:%d\", or drop allow_remote and listen on 127.0.0.1", l.addr.Port)
	}
	return c
}

// tokenCheck reads the token again, as the start did: a token file others can read
// fails, a short token or one rewritten since the start warns. It never shows the token.
func (l *httpListener) tokenCheck() api.Check {
	c := api.Check{Name: "http token", Status: api.CheckOK}
	where, fix := "$"+l.cfg.TokenEnv, "set "+l.cfg.TokenEnv+" to the output of `openssl rand -hex 32` and restart agentd"
	if f := l.cfg.TokenFile; f != "" {
		// umask 077: the new token is never readable by others, not even for a moment.
		where, fix = f, "(umask 077; openssl rand -hex 32 > "+f+"), then restart agentd"
		fi, err := os.Stat(f)
		if err != nil {
			c.Status, c.Detail, c.Fix = api.CheckFail, "cannot read the token file: "+err.Error(), fix
			return c
		}
		if perm := fi.Mode().Perm(); perm&0o077 != 0 {
			c.Status, c.Detail = api.CheckFail, fmt.Sprintf("%s has mode %04o: others on this machine can read the token that steers your agents", f, perm)
			c.Fix = "chmod 600 " + f
			return c
		}
		where = fmt.Sprintf("%s (mode %04o)", f, fi.Mode().Perm())
	}
	tok, err := httpSecret(l.cfg).read()
	switch {
	case err != nil:
		c.Status, c.Detail, c.Fix = api.CheckFail, err.Error()+"; the listener still takes the token read at start", fix
	case len(tok) < minTokenLen:
		c.Status, c.Fix = api.CheckFail, fix
		c.Detail = fmt.Sprintf("the token in %s is %d characters, under the %d agentd starts with", where, len(tok), minTokenLen)
	case sha256.Sum256([]byte(tok)) != l.tokenHash:
		c.Status, c.Detail = api.CheckWarn, "the token in "+where+" changed since agentd started: the listener still takes the old one"
		c.Fix = "restart agentd (a reload does not change [http])"
	case len(tok) < goodTokenLen:
		c.Status, c.Fix = api.CheckWarn, fix
		c.Detail = fmt.Sprintf("the token in %s is %d characters: use at least %d", where, len(tok), goodTokenLen)
	default:
		c.Detail = "read from " + where + ", " + strconv.Itoa(goodTokenLen) + "+ characters"
	}
	return c
}

// httpServes names what the listener serves: "metrics, agent protocol".
func httpServes(st api.HTTPStatus) string {
	parts := []string{}
	if st.Metrics {
		parts = append(parts, "metrics")
	}
	if st.AgentProtocol {
		parts = append(parts, "agent protocol")
	}
	return strings.Join(parts, ", ")
}
