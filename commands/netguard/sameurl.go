package netguard

import (
	"net"
	"net/url"
	"sort"
	"strings"
)

// trackingParams are query parameters that mark where a click came from, never what the
// page is: two URLs that differ only in these fetch the same page.
var trackingParams = map[string]bool{
	"fbclid": true, "gclid": true, "dclid": true, "msclkid": true, "mc_cid": true, "mc_eid": true,
	"yclid": true, "igshid": true, "_ga": true, "ref_src": true,
}

// SameURL returns raw in a form where two http(s) URLs that reach the same page read the
// same: scheme and host as the guard reads them (ParseHost: 0x7f.1 is 127.0.0.1, case and
// a trailing dot dropped), the default port and the fragment dropped, tracking parameters
// (utm_*, fbclid, gclid...) dropped and the rest sorted. ok is false for anything that is
// not an absolute http(s) URL with a host the guard can read; raw is then returned as is.
func SameURL(raw string) (string, bool) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return raw, false
	}
	scheme := strings.ToLower(u.Scheme)
	if (scheme != "http" && scheme != "https") || u.Hostname() == "" {
		return raw, false
	}
	ip, name, err := ParseHost(u.Hostname())
	if err != nil {
		return raw, false
	}
	host := name
	if ip.IsValid() {
		host = ip.String()
	}
	p, ok := PortOf(u)
	if !ok {
		return raw, false
	}
	if !(scheme == "http" && p == "80") && !(scheme == "https" && p == "443") {
		host = net.JoinHostPort(host, p)
	} else if ip.Is6() {
		host = "[" + host + "]"
	}
	q := u.Query()
	for k := range q {
		if strings.HasPrefix(strings.ToLower(k), "utm_") || trackingParams[strings.ToLower(k)] {
			q.Del(k)
		}
	}
	for _, vs := range q {
		sort.Strings(vs)
	}
	path := u.EscapedPath()
	if path == "" {
		path = "/"
	}
	out := scheme + "://" + host + path
	if enc := q.Encode(); enc != "" { // Encode sorts by key
		out += "?" + enc
	}
	return out, true
}
