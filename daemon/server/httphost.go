package server

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// hostCheck decides which Host (and Origin) names the TCP listener answers to: its own
// address by loopback IP, localhost or the configured name, on its own port. A browser
// tricked by DNS rebinding sends the attacker's name as Host; a page's fetch sends its
// Origin. Both are refused before the token is even looked at.
type hostCheck struct {
	port  string
	names map[string]bool // lowercased host names and IPs, without the port
	// anyIP: the listener is bound to every address (0.0.0.0, [::]); any IP literal
	// names it. An IP literal cannot be rebound, so this stays safe.
	anyIP bool
}

func newHostCheck(addr net.Addr, listen string) hostCheck {
	hc := hostCheck{names: map[string]bool{"localhost": true, "127.0.0.1": true, "::1": true}}
	if tcp, ok := addr.(*net.TCPAddr); ok {
		hc.port = strconv.Itoa(tcp.Port)
		hc.anyIP = tcp.IP.IsUnspecified()
		if !tcp.IP.IsUnspecified() {
			hc.names[tcp.IP.String()] = true
		}
	}
	if host, _, err := net.SplitHostPort(listen); err == nil && host != "" {
		hc.names[strings.ToLower(host)] = true
	}
	return hc
}

// refuse returns why r may not be served here, or "".
func (hc hostCheck) refuse(r *http.Request) string {
	if !hc.allowed(r.Host) {
		return fmt.Sprintf("this listener does not answer to Host %q: reach it as 127.0.0.1:%s or localhost:%s (requests naming another host are refused against DNS rebinding)",
			r.Host, hc.port, hc.port)
	}
	if o := r.Header.Get("Origin"); o != "" && !hc.sameOrigin(o) {
		return fmt.Sprintf("requests from the web page %q are refused: this listener is for Prometheus and Agent Protocol clients, not browsers", o)
	}
	if site := r.Header.Get("Sec-Fetch-Site"); site == "cross-site" || site == "same-site" {
		return "requests a browser makes for another site are refused: this listener is for Prometheus and Agent Protocol clients, not browsers"
	}
	return ""
}

// allowed reports whether hostport (a Host header) names this listener.
func (hc hostCheck) allowed(hostport string) bool {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil { // no port: only right when the listener is on the default one
		host, port = strings.Trim(hostport, "[]"), "80"
	}
	if port != hc.port || host == "" {
		return false
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if hc.names[host] {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && (ip.IsLoopback() || hc.anyIP)
}

// sameOrigin reports whether an Origin header names this listener itself.
func (hc hostCheck) sameOrigin(origin string) bool {
	u, err := url.Parse(origin)
	return err == nil && u.Scheme == "http" && u.Path == "" && hc.allowed(u.Host)
}
