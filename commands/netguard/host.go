package netguard

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"golang.org/x/net/idna"
)

// ErrBadHost marks a host the guard cannot read one way only: it may be an address to one
// client and a name to another, so it is refused rather than guessed at.
var ErrBadHost = errors.New("host not understood")

// HostError is a host refused because it is not clearly a name or an address.
type HostError struct {
	Host   string
	Reason string
}

func (e *HostError) Error() string {
	return fmt.Sprintf("host %q %s; give a plain host name like example.com or an address like 93.184.215.14", e.Host, e.Reason)
}

// Unwrap makes errors.Is(err, ErrBadHost) true.
func (e *HostError) Unwrap() error { return ErrBadHost }

// idnaMap maps a non-ASCII host the way browsers and libidn2 do (UTS #46), so fullwidth
// digits and ideographic full stops become the ASCII address they stand for.
var idnaMap = idna.New(idna.MapForLookup(), idna.Transitional(false), idna.StrictDomainName(false))

// ParseHost reads host (a URL's host without brackets or port, or with brackets) as the
// most liberal client would. It returns ip when any client could take host for an IP
// address: IPv6 with or without a zone, or IPv4 in the WHATWG/inet_aton forms (1 to 4
// parts, each decimal, octal with a leading 0 or hex with 0x, the last filling the
// remaining bytes; a trailing dot). Otherwise it returns name, lower-case ASCII, to be
// resolved. A host that looks numeric but is no valid address (1.2.3.4.5, 08.1,
// 4294967296), holds percent signs or characters no host name has, is an error.
func ParseHost(host string) (ip netip.Addr, name string, err error) {
	bad := func(reason string) (netip.Addr, string, error) {
		return netip.Addr{}, "", &HostError{Host: host, Reason: reason}
	}
	h := host
	if strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]") {
		h = h[1 : len(h)-1]
		if !strings.Contains(h, ":") {
			return bad("is in brackets but is no IPv6 address")
		}
	}
	if strings.Contains(h, ":") {
		a, err := netip.ParseAddr(h)
		if err != nil || !a.Is6() {
			return bad("is no valid IPv6 address")
		}
		return a, "", nil
	}
	if strings.Contains(h, "%") {
		return bad("is percent-encoded")
	}
	if !isASCII(h) {
		mapped, err := idnaMap.ToASCII(h)
		if err != nil || !isASCII(mapped) {
			return bad("is not a valid international domain name")
		}
		h = mapped
	}
	h = strings.ToLower(h)
	if h == "" || len(h) > 254 {
		return bad("is empty or too long")
	}
	for i := 0; i < len(h); i++ {
		if c := h[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return bad("holds characters no host name has")
		}
	}
	h = strings.TrimSuffix(h, ".")
	labels := strings.Split(h, ".")
	if numeric(labels[len(labels)-1]) {
		a, ok := parseIPv4(labels)
		if !ok {
			return bad("looks like a numeric address but is no valid one")
		}
		return a, "", nil
	}
	for _, l := range labels {
		if l == "" || len(l) > 63 {
			return bad("has an empty or over-long label")
		}
	}
	return netip.Addr{}, h, nil
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// numeric reports whether a label is a number to the WHATWG host parser ("ends in a
// number"): all decimal digits, or 0x followed by hex digits (none at all included).
func numeric(label string) bool {
	if label == "" {
		return false
	}
	if strings.HasPrefix(label, "0x") {
		return strings.Trim(label[2:], "0123456789abcdef") == ""
	}
	return strings.Trim(label, "0123456789") == ""
}

// parseIPv4 parses the lower-case labels as the WHATWG IPv4 parser and inet_aton do.
func parseIPv4(labels []string) (netip.Addr, bool) {
	if len(labels) > 4 {
		return netip.Addr{}, false
	}
	var n uint64
	for i, l := range labels {
		v, ok := ipv4Number(l)
		if !ok {
			return netip.Addr{}, false
		}
		if i < len(labels)-1 {
			if v > 255 {
				return netip.Addr{}, false
			}
			n |= v << (24 - 8*i)
			continue
		}
		if v >= 1<<(8*(5-len(labels))) {
			return netip.Addr{}, false
		}
		n |= v
	}
	return netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}), true
}

// ipv4Number reads one part: 0x hex (digits optional), leading-0 octal, else decimal.
func ipv4Number(s string) (uint64, bool) {
	base := 10
	switch {
	case s == "":
		return 0, false
	case strings.HasPrefix(s, "0x"):
		s, base = s[2:], 16
		if s == "" {
			return 0, true
		}
	case len(s) > 1 && s[0] == '0':
		s, base = s[1:], 8
	}
	if strings.ContainsAny(s, "+-_") {
		return 0, false
	}
	v, err := strconv.ParseUint(s, base, 32)
	return v, err == nil
}
