// Package netguard is the one place that decides whether a command may reach an address,
// and the only way the network commands (read_webpage in commands/web, clone_repository
// in commands/shell) connect to hosts a model chose.
//
// A host is read as the most liberal client would read it (ParseHost: every IPv4 form
// inet_aton and browsers accept, IPv6 with zones, IPv4-mapped, NAT64 and 6to4 forms),
// resolved once, and refused when any of its addresses is not public (Kind: loopback,
// private, link-local, carrier-grade NAT, multicast, documentation, reserved ...), so a
// mixed DNS answer cannot be raced. The connection then goes to the checked address, and
// the dialer's Control checks the socket address once more just before connect(2).
// Programs that do their own networking (git) are pointed at a Proxy whose only way out
// is the guard's dialer. AllowPrivate (config [web_commands] allow_private) lifts the check.
package netguard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"syscall"
	"time"
)

// ErrBlocked marks a connection the guard refused; a *BlockedError carries the details.
var ErrBlocked = errors.New("address not allowed")

// BlockedError is a connection the guard refused: Host (as the URL named it) stands for
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
	} else if ip, _, err := ParseHost(e.Host); err == nil && ip.IsValid() {
		what = fmt.Sprintf("%s is %s, a %s address", e.Host, e.Addr, e.Kind)
	}
	return what + "; only public addresses may be reached (private ones need allow_private = true in agentd's [web_commands] config)"
}

// Unwrap makes errors.Is(err, ErrBlocked) true.
func (e *BlockedError) Unwrap() error { return ErrBlocked }

// DefaultDialTimeout bounds one connect when Guard.DialTimeout is zero.
const DefaultDialTimeout = 10 * time.Second

// Guard checks and dials addresses. The zero value refuses every non-public address and
// resolves with the system resolver. Set the fields before first use; a Guard is safe
// for concurrent use.
type Guard struct {
	// AllowPrivate lets the guard reach loopback, private and other non-public addresses.
	AllowPrivate bool
	// Resolver looks host names up; nil uses the system resolver. Tests inject a map.
	Resolver func(ctx context.Context, host string) ([]netip.Addr, error)
	// DialTimeout bounds one connect; zero is DefaultDialTimeout.
	DialTimeout time.Duration

	// Exempt admits exact addresses and ports despite the rules. Tests set it to reach
	// their own loopback server while every other non-public address stays refused; the
	// daemon never does.
	Exempt func(netip.AddrPort) bool
	// BeforeConnect, when set, sees every socket address right before connect(2) and may
	// veto it: tests' tripwire that keeps their traffic on loopback.
	BeforeConnect func(netip.AddrPort) error
}

// Check refuses ip (reached as host, on port) unless it is public or allowed.
func (g *Guard) Check(host string, ip netip.Addr, port uint16) error {
	if g.AllowPrivate {
		return nil
	}
	kind := Kind(ip)
	if kind == "" {
		return nil
	}
	if g.Exempt != nil && g.Exempt(netip.AddrPortFrom(ip.WithZone(""), port)) {
		return nil
	}
	return &BlockedError{Host: host, Addr: ip, Kind: kind}
}

// CheckHost refuses, without asking DNS, a host that is an address the guard would
// refuse or that ParseHost cannot read. A name passes: it is resolved and checked once,
// when it is dialled. Use it to refuse before starting a program that would connect.
func (g *Guard) CheckHost(host string, port uint16) error {
	ip, _, err := ParseHost(host)
	if err != nil {
		return err
	}
	if ip.IsValid() {
		return g.Check(host, ip, port)
	}
	return nil
}

// Lookup returns the addresses host stands for, each one checked: itself when it is an
// address in any form, else what the resolver says. One refused address refuses all.
func (g *Guard) Lookup(ctx context.Context, host string, port uint16) ([]netip.Addr, error) {
	ip, name, err := ParseHost(host)
	if err != nil {
		return nil, err
	}
	ips := []netip.Addr{ip}
	if !ip.IsValid() {
		if ips, err = g.resolve(ctx, name); err != nil {
			return nil, err
		}
	}
	for _, ip := range ips {
		if err := g.Check(host, ip, port); err != nil {
			return nil, err
		}
	}
	return ips, nil
}

func (g *Guard) resolve(ctx context.Context, name string) ([]netip.Addr, error) {
	lookup := g.Resolver
	if lookup == nil {
		lookup = func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		}
	}
	ips, err := lookup(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("cannot resolve %s: %w", name, err)
	}
	if len(ips) == 0 {
		return nil, fmt.Errorf("cannot resolve %s: no addresses", name)
	}
	return ips, nil
}

// DialContext connects to address ("host:port") over TCP, with the signature of
// net.Dialer.DialContext. It looks the host up and checks every address (Lookup), then
// dials the checked addresses in turn; the dialer's Control checks the socket address
// once more.
func (g *Guard) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	if !strings.HasPrefix(network, "tcp") {
		return nil, fmt.Errorf("netguard: network %q: only tcp is dialled", network)
	}
	host, portStr, err := net.SplitHostPort(address)
	if err != nil {
		return nil, err
	}
	port, err := net.LookupPort(network, portStr)
	if err != nil {
		return nil, err
	}
	ips, err := g.Lookup(ctx, host, uint16(port))
	if err != nil {
		return nil, err
	}
	timeout := g.DialTimeout
	if timeout <= 0 {
		timeout = DefaultDialTimeout
	}
	d := net.Dialer{Timeout: timeout, Control: func(_, address string, _ syscall.RawConn) error {
		return g.control(host, address)
	}}
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

// control is the last check, on the socket address itself, right before connect(2).
func (g *Guard) control(host, address string) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("netguard: unexpected socket address %q: %w", address, err)
	}
	if err := g.Check(host, ap.Addr(), ap.Port()); err != nil {
		return err
	}
	if g.BeforeConnect != nil {
		return g.BeforeConnect(ap)
	}
	return nil
}
