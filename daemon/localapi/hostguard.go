package localapi

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// HostGuard decides which requests a TCP listener of the daemon (metrics and Agent
// Protocol, the web console) answers: those naming the listener itself in Host, sent by
// no other web page. A page whose DNS name is rebound to 127.0.0.1 still sends its own
// name as Host; a page's fetch or form sends its own Origin. Every TCP listener uses
// this one guard, so the rules cannot drift apart; it runs before any token or session
// is looked at.
type HostGuard struct {
	// Name is the listener in refusals ("the web console"); Reach says how to reach it.
	Name, Reach string
	port        string
	names       map[string]bool // lowercased host names and IPs, without the port
	// anyIP: the listener is bound to every address (0.0.0.0, [::]), so any IP literal
	// names it. An IP literal cannot be rebound, so this stays safe.
	anyIP bool
}

// NewHostGuard makes the guard for the listener bound at addr, configured as listen
// (host:port; its host, a name or an IP, is accepted as well as loopback and localhost).
func NewHostGuard(addr net.Addr, listen string) HostGuard {
	g := HostGuard{names: map[string]bool{"localhost": true, "127.0.0.1": true, "::1": true}}
	if tcp, ok := addr.(*net.TCPAddr); ok {
		g.port = strconv.Itoa(tcp.Port)
		g.anyIP = tcp.IP.IsUnspecified()
		if !g.anyIP {
			g.names[tcp.IP.String()] = true
		}
	}
	if host, _, err := net.SplitHostPort(listen); err == nil && host != "" {
		g.names[strings.ToLower(host)] = true
	}
	return g
}

// Port is the listener's port, as it appears in Host.
func (g HostGuard) Port() string { return g.port }

// Refuse returns the status and the reason r may not be served, or 0 and "".
func (g HostGuard) Refuse(r *http.Request) (int, string) {
	if !g.allowed(r.Host) {
		return http.StatusMisdirectedRequest, fmt.Sprintf("%s does not answer to Host %q: reach it as %s "+
			"(requests naming another host are refused against DNS rebinding)", g.Name, r.Host, g.Reach)
	}
	if o, ok := r.Header["Origin"]; ok && (len(o) != 1 || !g.sameOrigin(o[0])) {
		return http.StatusForbidden, fmt.Sprintf("requests from the web page %q are refused: only %s's own pages may use it", r.Header.Get("Origin"), g.Name)
	}
	if site := r.Header.Get("Sec-Fetch-Site"); site == "cross-site" || site == "same-site" {
		return http.StatusForbidden, fmt.Sprintf("requests another site's page makes are refused: reach %s as %s", g.Name, g.Reach)
	}
	return 0, ""
}

// allowed reports whether hostport (a Host header, or an Origin's host) names this
// listener. It is strict on purpose: no user info, no trailing dot, no non-ASCII (IDN)
// form, no other port; a missing port means 80, as in HTTP.
func (g HostGuard) allowed(hostport string) bool {
	for i := 0; i < len(hostport); i++ {
		if c := hostport[i]; c >= 0x80 || c == '@' {
			return false
		}
	}
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		host, port = strings.TrimSuffix(strings.TrimPrefix(hostport, "["), "]"), "80"
	}
	if port != g.port || host == "" || strings.HasSuffix(host, ".") {
		return false
	}
	host = strings.ToLower(host)
	if g.names[host] {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && (ip.IsLoopback() || g.anyIP)
}

// sameOrigin reports whether an Origin header names this listener itself: plain http,
// no user info, path, query or fragment.
func (g HostGuard) sameOrigin(origin string) bool {
	u, err := url.Parse(origin)
	return err == nil && u.Scheme == "http" && u.User == nil && u.Opaque == "" && u.Path == "" &&
		u.RawQuery == "" && !u.ForceQuery && u.Fragment == "" && g.allowed(u.Host)
}
