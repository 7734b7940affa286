package netguard

import "net/netip"

// ranges lists the non-public ranges netip's predicates do not name (RFC 6890 and the
// IANA special-purpose registries), most specific first where they nest.
var ranges = []struct {
	prefix netip.Prefix
	kind   string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), `"this network"`},
	{netip.MustParsePrefix("100.64.0.0/10"), "carrier-grade NAT"},
	{netip.MustParsePrefix("192.0.0.0/24"), "reserved"},
	{netip.MustParsePrefix("192.0.2.0/24"), "documentation"},
	{netip.MustParsePrefix("192.88.99.0/24"), "reserved"}, // the retired 6to4 relay anycast
	{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking"},
	{netip.MustParsePrefix("198.51.100.0/24"), "documentation"},
	{netip.MustParsePrefix("203.0.113.0/24"), "documentation"},
	{netip.MustParsePrefix("255.255.255.255/32"), "broadcast"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved"},
	{netip.MustParsePrefix("::/96"), "IPv4-compatible"},
	{netip.MustParsePrefix("64:ff9b:1::/48"), "local NAT64"},
	{netip.MustParsePrefix("::/8"), "reserved"}, // IPv4-translated ::ffff:0:0:0/96 and the rest of ::/8
	{netip.MustParsePrefix("100::/64"), "discard"},
	{netip.MustParsePrefix("2001::/23"), "reserved"}, // Teredo, benchmarking, ORCHID
	{netip.MustParsePrefix("2001:db8::/32"), "documentation"},
	{netip.MustParsePrefix("3fff::/20"), "documentation"},
	{netip.MustParsePrefix("5f00::/16"), "reserved"}, // SRv6 segment identifiers
	{netip.MustParsePrefix("fec0::/10"), "site-local"},
}

// Prefixes that carry an IPv4 address inside; the kernel or a translator on the way
// reaches that address, so it is the one judged.
var (
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour = netip.MustParsePrefix("2002::/16")
)

// Kind says what kind of non-public address ip is ("loopback", "private", "link-local",
// "carrier-grade NAT", ...), or "" for a public one, the only kind a model may reach
// unless private addresses are allowed. A zone is ignored; an IPv4-mapped address is
// judged as the IPv4 address it maps; NAT64 and 6to4 addresses by the IPv4 one inside.
func Kind(ip netip.Addr) string {
	ip = ip.WithZone("")
	if ip.Is4In6() {
		ip = ip.Unmap() // ::ffff:127.0.0.1 is 127.0.0.1 to the kernel
	}
	switch {
	case !ip.IsValid():
		return "invalid"
	case ip.IsUnspecified():
		return "unspecified"
	case ip.IsLoopback():
		return "loopback"
	case ip.IsPrivate() && ip.Is6():
		return "unique-local"
	case ip.IsPrivate():
		return "private"
	case ip.IsLinkLocalUnicast():
		return "link-local"
	case ip.IsMulticast():
		return "multicast"
	}
	b := ip.As16()
	if nat64.Contains(ip) {
		if k := Kind(netip.AddrFrom4([4]byte(b[12:16]))); k != "" {
			return k + " (via NAT64)"
		}
		return ""
	}
	for _, r := range ranges {
		if r.prefix.Contains(ip) {
			return r.kind
		}
	}
	if sixToFour.Contains(ip) {
		if k := Kind(netip.AddrFrom4([4]byte(b[2:6]))); k != "" {
			return k + " (via 6to4)"
		}
	}
	if !ip.IsGlobalUnicast() {
		return "non-unicast"
	}
	return ""
}
