package netguard

import (
	"net/url"
	"strconv"
	"strings"
)

// DescribeHost is the host:port u connects to as the guard reads it, for a person judging
// a proposal: the address for any numeric form (0x7f.1 is 127.0.0.1, with how it was
// written), an international name in its ASCII form, user info dropped, and the raw host
// marked unreadable when the guard cannot read it one way only.
func DescribeHost(u *url.URL) string {
	port, ok := PortOf(u)
	if !ok {
		return strconv.Quote(u.Host) + " (a port the guard cannot read)"
	}
	ip, name, err := ParseHost(u.Hostname())
	switch {
	case err != nil:
		return strconv.Quote(u.Hostname()) + " (not a host the guard can read)"
	case ip.IsValid():
		host := ip.String() + ":" + port
		if ip.Is6() {
			host = "[" + ip.String() + "]:" + port
		}
		if ip.String() != u.Hostname() {
			host += " (written " + strconv.Quote(u.Hostname()) + ")"
		}
		if kind := Kind(ip); kind != "" {
			article := "a"
			if strings.ContainsRune("aeiou", rune(kind[0])) {
				article = "an" // an unspecified, an invalid address
			}
			host += ", " + article + " " + kind + " address"
		}
		return host
	}
	if name != u.Hostname() {
		return name + ":" + port + " (written " + strconv.Quote(u.Hostname()) + ")"
	}
	return name + ":" + port
}

// PortOf is the port u connects to, as a number without leading zeros (:0080 is 80): the
// one written, else the scheme's default (80 for http, 443 otherwise). ok is false for a
// port that is not a number from 0 to 65535.
func PortOf(u *url.URL) (port string, ok bool) {
	p := u.Port()
	if p == "" {
		if strings.EqualFold(u.Scheme, "http") {
			return "80", true
		}
		return "443", true
	}
	n, err := strconv.ParseUint(p, 10, 16)
	if err != nil {
		return p, false
	}
	return strconv.FormatUint(n, 10), true
}
