package localapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"

	"github.com/agentd/agentd/api"
)

// MsgAgentCommandPeer is the error a command an agent runs gets from the socket.
const MsgAgentCommandPeer = "requests from commands an agent runs are refused"

// Peer is who is at the other end of a unix socket connection (SO_PEERCRED): the process
// that connected, as the kernel recorded it at connect time.
type Peer struct {
	PID int32
	UID uint32
}

// PeerGuard refuses local API requests by who sent them. Nothing an agent runs may reach
// the daemon's own control: a process the agents' commands started (or its descendant)
// is refused, as is a process of another user than the daemon's (root excepted), should
// the socket's mode ever let one in.
type PeerGuard struct {
	// IsAgentCommand reports whether pid is a command an agent runs or descends from one;
	// nil refuses none by pid. (The shell package provides it: shell.CommandAncestor.)
	IsAgentCommand func(pid int32) bool
	// UID is the daemon's user; peers of any other but root are refused.
	UID uint32
	Log *slog.Logger // nil discards
}

// GuardPeers has srv refuse requests from peers guard refuses: it records each
// connection's peer (srv.ConnContext, chained) and wraps srv.Handler. Call it before Serve.
func GuardPeers(srv *http.Server, isAgentCommand func(pid int32) bool, log *slog.Logger) {
	g := &PeerGuard{IsAgentCommand: isAgentCommand, UID: uint32(os.Getuid()), Log: log}
	next := srv.ConnContext
	srv.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		if next != nil {
			ctx = next(ctx, c)
		}
		return withConnPeer(ctx, c)
	}
	srv.Handler = g.Wrap(srv.Handler)
}

// connPeer is a connection's peer, looked up once, at its first request (not in the
// server's accept loop), and judged once: every request on the connection shares it.
type connPeer struct {
	conn    net.Conn
	once    sync.Once
	peer    Peer
	known   bool // the kernel said who peer is
	refusal string
}

type connPeerKey struct{}

// errNoPeerCred is peerOf's error on systems where the kernel does not say who connected.
var errNoPeerCred = errors.New("peer credentials are supported on Linux only")

func withConnPeer(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connPeerKey{}, &connPeer{conn: c})
}

// Wrap returns h behind the guard. A request whose connection was not recorded (no
// GuardPeers on the server) is refused: the guard fails closed.
func (g *PeerGuard) Wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cp, _ := r.Context().Value(connPeerKey{}).(*connPeer)
		refusal := "the daemon cannot tell who sent this request"
		if cp != nil {
			cp.once.Do(func() {
				peer, err := peerOf(cp.conn)
				if errors.Is(err, errNoPeerCred) && g.IsAgentCommand == nil {
					return // nothing to check on this system, and nothing asked to
				}
				if err != nil {
					cp.refusal = fmt.Sprintf("the daemon cannot tell who sent this request: %v", err)
					return
				}
				cp.peer, cp.known, cp.refusal = peer, true, g.refusal(peer)
			})
			refusal = cp.refusal
		}
		if refusal != "" {
			g.log().Warn("api: peer refused", "method", r.Method, "path", r.URL.Path, "why", refusal)
			Reply(w, http.StatusForbidden, api.ErrorResponse{Error: refusal})
			return
		}
		if cp.known {
			r = r.WithContext(context.WithValue(r.Context(), peerKey{}, cp.peer))
		}
		h.ServeHTTP(w, r)
	})
}

func (g *PeerGuard) log() *slog.Logger {
	if g.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return g.Log
}

// refusal says why peer may not use the API, or "".
func (g *PeerGuard) refusal(p Peer) string {
	if p.UID != g.UID && p.UID != 0 {
		return fmt.Sprintf("requests from other users are refused: uid %d is not agentd's (uid %d)", p.UID, g.UID)
	}
	if g.IsAgentCommand != nil && g.IsAgentCommand(p.PID) {
		return MsgAgentCommandPeer
	}
	return ""
}

type peerKey struct{}

// PeerFrom returns the peer of the request whose context ctx is, when the guard knew it.
func PeerFrom(ctx context.Context) (Peer, bool) {
	p, ok := ctx.Value(peerKey{}).(Peer)
	return p, ok
}
