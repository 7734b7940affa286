package web

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"syscall"
	"time"
)

// ErrBlocked marks a connection the SSRF guard refused; a *BlockedError carries the details.
var ErrBlocked = errors.New("address not allowed")

// BlockedError is a connection the guard refused: Host (as the URL named it) resolved to
// Addr, which is not a public address.
type BlockedError struct {
	Host string
	Addr netip.Addr
	Kind string // what the address is: "loopback", "private", "link-local", ...
}

func (e *BlockedError) Error() string {
	what := fmt.Sprintf("%s resolves to %s, a %s address", e.Host, e.Addr, e.Kind)
	if e.Host == "" || e.Host == e.Addr.String() {
		what = fmt.Sprintf("%s is a %s address", e.Addr, e.Kind)
	}
	return what + "; only public addresses may be fetched (private ones need allow_private)"
}

// Unwrap makes errors.Is(err, ErrBlocked) true.
func (e *BlockedError) Unwrap() error { return ErrBlocked }

// nonPublic lists the ranges beyond what netip's predicates cover (RFC 6890 and friends)
// that no web page a model asks for lives at.
var nonPublic = []struct {
	prefix netip.Prefix
	kind   string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), `"this network"`},
	{netip.MustParsePrefix("100.64.0.0/10"), "carrier-grade NAT"},
	{netip.MustParsePrefix("192.0.0.0/24"), "reserved"},
	{netip.MustParsePrefix("192.0.2.0/24"), "documentation"},
	{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking"},
	{netip.MustParsePrefix("198.51.100.0/24"), "documentation"},
	{netip.MustParsePrefix("203.0.113.0/24"), "documentation"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved"}, // and 255.255.255.255
	{netip.MustParsePrefix("::/96"), "IPv4-compatible"},
	{netip.MustParsePrefix("64:ff9b:1::/48"), "local NAT64"},
	{netip.MustParsePrefix("100::/64"), "discard"},
	{netip.MustParsePrefix("2001::/23"), "reserved"}, // Teredo, benchmarking, ORCHID
	{netip.MustParsePrefix("2001:db8::/32"), "documentation"},
	{netip.MustParsePrefix("fec0::/10"), "site-local"},
}

var (
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour = netip.MustParsePrefix("2002::/16")
)

// addrKind says what kind of non-public address ip is, or "" for a public one.
func addrKind(ip netip.Addr) string {
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
	for _, r := range nonPublic {
		if r.prefix.Contains(ip) {
			return r.kind
		}
	}
	// Translation prefixes carry an IPv4 address inside: judge that one.
	b := ip.As16()
	if nat64.Contains(ip) {
		if k := addrKind(netip.AddrFrom4([4]byte(b[12:16]))); k != "" {
			return k + " (via NAT64)"
		}
	}
	if sixToFour.Contains(ip) {
		if k := addrKind(netip.AddrFrom4([4]byte(b[2:6]))); k != "" {
			return k + " (via 6to4)"
		}
	}
	if !ip.IsGlobalUnicast() {
		return "non-unicast"
	}
	return ""
}

// check refuses ip (reached as host, on port) unless it is public or the fetcher allows it.
func (f *Fetcher) check(host string, ip netip.Addr, port uint16) error {
	if f.AllowPrivate {
		return nil
	}
	kind := addrKind(ip)
	if kind == "" {
		return nil
	}
	if f.allowAddr != nil && f.allowAddr(netip.AddrPortFrom(ip.WithZone(""), port)) {
		return nil
	}
	return &BlockedError{Host: host, Addr: ip, Kind: kind}
}

// resolve returns the addresses host stands for: itself when it is an IP literal, else
// what the resolver says.
func (f *Fetcher) resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	if ip, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{ip}, nil
	}
	lookup := f.Resolver
	if lookup == nil {
		lookup = func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		}
	}
	ips, err := lookup(ctx, host)
	if err != nil {
		return nil, fmt.Errorf("cannot resolve %s: %w", host, err)
	}
	if len(ips) == 0 {
		return nil, fmt.Errorf("cannot resolve %s: no addresses", host)
	}
	return ips, nil
}

// dialContext is the transport's only way out. It resolves the host itself, refuses the
// host if any of its addresses is not allowed (so a mixed answer cannot be raced), then
// dials the checked IP literals; the dialer's Control checks the socket address once more.
func (f *Fetcher) dialContext(ctx context.Context, network, address string) (net.Conn, error) {
	host, portStr, err := net.SplitHostPort(address)
	if err != nil {
		return nil, err
	}
	port, err := net.LookupPort(network, portStr)
	if err != nil {
		return nil, err
	}
	ips, err := f.resolve(ctx, host)
	if err != nil {
		return nil, err
	}
	for _, ip := range ips {
		if err := f.check(host, ip, uint16(port)); err != nil {
			return nil, err
		}
	}
	d := net.Dialer{
		Timeout: 10 * time.Second,
		Control: func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return fmt.Errorf("web: unexpected socket address %q: %w", address, err)
			}
			if err := f.check(host, ap.Addr(), ap.Port()); err != nil {
				return err
			}
			if f.beforeConnect != nil {
				return f.beforeConnect(ap)
			}
			return nil
		},
	}
	var firstErr error
	for _, ip := range ips {
		c, err := d.DialContext(ctx, network, netip.AddrPortFrom(ip, uint16(port)).String())
		if err == nil {
			return c, nil
		}
		if firstErr == nil {
			firstErr = err
		}
	}
	return nil, firstErr
}
