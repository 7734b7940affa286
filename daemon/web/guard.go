package web

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// csp allows only the console's own script and style: no inline script, no eval, no
// framing (clickjacking a decision), no form posting elsewhere, no plugins.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
	"form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// secureHeaders are set on every reply, refusals included.
func secureHeaders(h http.Header) {
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	// same-origin, not no-referrer: with no-referrer a browser sends "Origin: null" on the
	// console's own form posts, which the guard must refuse; other sites still get nothing.
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
}

// hostGuard refuses requests that do not name the console's own loopback address: a web
// page that rebinds its DNS name to 127.0.0.1 still sends its own name as Host, and a
// page's form or fetch sends its own Origin.
type hostGuard struct {
	port string
}

// refuse returns the status and the reason r is refused, or 0.
func (g hostGuard) refuse(r *http.Request) (int, string) {
	if !g.allowed(r.Host) {
		return http.StatusMisdirectedRequest, fmt.Sprintf("the console does not answer to Host %q: open it as http://127.0.0.1:%s/ "+
			"(requests naming another host are refused against DNS rebinding)", r.Host, g.port)
	}
	if o := r.Header.Get("Origin"); o != "" && !g.sameOrigin(o) {
		return http.StatusForbidden, fmt.Sprintf("requests from the web page %q are refused: only the console's own pages may use it", o)
	}
	if site := r.Header.Get("Sec-Fetch-Site"); site == "cross-site" || site == "same-site" {
		return http.StatusForbidden, "requests another site's page makes are refused: open the console from the URL `agentctl web` prints"
	}
	return 0, ""
}

// allowed reports whether hostport (a Host header) is the console's own: a loopback IP
// or localhost, on its port.
func (g hostGuard) allowed(hostport string) bool {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil || port != g.port {
		return false
	}
	host = strings.ToLower(host)
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// sameOrigin reports whether an Origin header names the console itself.
func (g hostGuard) sameOrigin(origin string) bool {
	u, err := url.Parse(origin)
	return err == nil && u.Scheme == "http" && u.User == nil && u.Path == "" && u.RawQuery == "" && u.Fragment == "" && g.allowed(u.Host)
}
