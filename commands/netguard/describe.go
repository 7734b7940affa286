package netguard

import (
	"net/url"
	"strconv"
)

// DescribeHost is the host:port u connects to as the guard reads it, for a person judging
// a proposal: the address for any numeric form (0x7f.1 is 127.0.0.1, with how it was
// written), an international name in its ASCII form, user info dropped, and the raw host
// marked unreadable when the guard cannot read it one way only.
func DescribeHost(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = "443"
		if u.Scheme == "http" {
			port = "80"
		}
	} else if n, err := strconv.ParseUint(port, 10, 16); err == nil {
		port = strconv.FormatUint(n, 10) // :0080 connects to 80
	} else {
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
			host += ", a " + kind + " address"
		}
		return host
	}
	if name != u.Hostname() {
		return name + ":" + port + " (written " + strconv.Quote(u.Hostname()) + ")"
	}
	return name + ":" + port
}
