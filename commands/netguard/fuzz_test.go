package netguard

import (
	"net/netip"
	"strings"
	"testing"
)

// FuzzParseHost: whatever the input, ParseHost never lets through as public (or as a
// name to resolve) a host that net/netip, a WHATWG-style parser or glibc's inet_aton
// reads as a non-public address.
func FuzzParseHost(f *testing.F) {
	for _, s := range []string{"127.0.0.1", "127.1", "0x7f000001", "017700000001", "2130706433",
		"0177.0.0.1", "127.0.0.1.", "::ffff:127.0.0.1", "[::1]", "fe80::1%eth0", "64:ff9b::7f00:1",
		"2002:7f00:1::", "1.2.3.4.5", "08.0.0.1", "example.com", "127.0.0.1.nip.io", "0x", "0x7f.1",
		"１２７.0.0.1", "127。0。0。1", "10.1", "169.254.43518", "0", "127.0.0.1 x", "0X7F.1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, host string) {
		ip, name, err := ParseHost(host)
		if err != nil {
			return // refused: safe whatever it is
		}
		for ref, parse := range map[string]func(string) (netip.Addr, bool){
			"netip": refNetip, "whatwg": refWHATWG, "inet_aton": refInetAton,
		} {
			other, ok := parse(host)
			if !ok || Kind(other) == "" {
				continue
			}
			if !ip.IsValid() {
				t.Fatalf("ParseHost(%q) = name %q, but %s reads %s (%s)", host, name, ref, other, Kind(other))
			}
			if Kind(ip) == "" {
				t.Fatalf("ParseHost(%q) = public %s, but %s reads %s (%s)", host, ip, ref, other, Kind(other))
			}
		}
		if ip.IsValid() == (name != "") {
			t.Fatalf("ParseHost(%q) = %v, %q: want exactly one of an address and a name", host, ip, name)
		}
	})
}

func refNetip(s string) (netip.Addr, bool) {
	s = strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")
	a, err := netip.ParseAddr(s)
	return a, err == nil
}

// refWHATWG follows the URL Standard's IPv4 parser on an ASCII host, written apart from
// the implementation: strip one empty last part, 1–4 parts, 0x/0X hex, leading-0 octal.
func refWHATWG(s string) (netip.Addr, bool) {
	parts := strings.Split(s, ".")
	if len(parts) > 1 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	if len(parts) > 4 || len(parts) == 0 {
		return netip.Addr{}, false
	}
	nums := make([]uint64, len(parts))
	for i, p := range parts {
		v, ok := refNumber(p, true)
		if !ok {
			return netip.Addr{}, false
		}
		nums[i] = v
	}
	return refCombine(nums)
}

// refInetAton follows glibc's inet_aton: parts start with a digit; 0x hex, 0 octal (8
// and 9 refused); anything after the address must start with white space.
func refInetAton(s string) (netip.Addr, bool) {
	if i := strings.IndexAny(s, " \t\n\v\f\r"); i >= 0 {
		s = s[:i]
	}
	parts := strings.Split(s, ".")
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	nums := make([]uint64, len(parts))
	for i, p := range parts {
		if p == "" || p[0] < '0' || p[0] > '9' {
			return netip.Addr{}, false
		}
		v, ok := refNumber(p, false)
		if !ok {
			return netip.Addr{}, false
		}
		nums[i] = v
	}
	return refCombine(nums)
}

func refNumber(p string, upperX bool) (uint64, bool) {
	base, digits := uint64(10), p
	switch {
	case strings.HasPrefix(p, "0x") || upperX && strings.HasPrefix(p, "0X") || strings.HasPrefix(p, "0X"):
		base, digits = 16, p[2:]
	case len(p) > 1 && p[0] == '0':
		base, digits = 8, p[1:]
	case p == "":
		return 0, false
	}
	var v uint64
	for _, c := range strings.ToLower(digits) {
		d := uint64(strings.IndexRune("0123456789abcdef", c))
		if d == ^uint64(0) || d >= base {
			return 0, false
		}
		if v = v*base + d; v > 1<<32 {
			return 0, false
		}
	}
	return v, true
}

func refCombine(nums []uint64) (netip.Addr, bool) {
	last := nums[len(nums)-1]
	if last >= 1<<(8*(5-len(nums))) {
		return netip.Addr{}, false
	}
	n := last
	for i, v := range nums[:len(nums)-1] {
		if v > 255 {
			return netip.Addr{}, false
		}
		n |= v << (24 - 8*i)
	}
	return netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}), true
}
