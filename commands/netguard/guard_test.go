package netguard

import (
	"context"
	"errors"
	"net/netip"
	"net/url"
	"strings"
	"testing"

	"github.com/agentd/agentd/internal/netguardtest"
	"github.com/agentd/agentd/internal/testutil"
)

// fakeDNS answers from netguardtest.Names; nothing here asks a real resolver.
var fakeDNS = netguardtest.Resolver(netguardtest.Names).Lookup

// TestCorpusLookup runs the shared corpus through the guard alone: every URL that parses
// is refused by Lookup with the row's kind, and by CheckHost (no DNS) unless it is a name.
func TestCorpusLookup(t *testing.T) {
	cases := netguardtest.Corpus("8080")
	if len(cases) < 60 {
		t.Fatalf("corpus has %d cases, want at least 60", len(cases))
	}
	g := &Guard{Resolver: fakeDNS}
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			u, err := url.Parse(tc.URL)
			if err != nil {
				if tc.Kind != "" {
					t.Fatalf("url.Parse(%s): %v; the row expects the guard to refuse it as %s", tc.URL, err, tc.Kind)
				}
				return // no Go client gets further
			}
			_, err = g.Lookup(context.Background(), u.Hostname(), 80)
			checkRefusal(t, err, tc.Kind)
			err = g.CheckHost(u.Hostname(), 80)
			if tc.IsName {
				if err != nil {
					t.Errorf("CheckHost(%s) = %v; a name is checked when resolved", u.Hostname(), err)
				}
				return
			}
			checkRefusal(t, err, tc.Kind)
		})
	}
}

func checkRefusal(t *testing.T, err error, kind string) {
	t.Helper()
	var be *BlockedError
	switch {
	case err == nil:
		t.Fatalf("not refused")
	case kind == "":
		if !errors.Is(err, ErrBadHost) {
			t.Errorf("error %v; want ErrBadHost", err)
		}
	case !errors.As(err, &be):
		t.Errorf("error %v; want a BlockedError (%s)", err, kind)
	case be.Kind != kind:
		t.Errorf("kind %q, want %q (%v)", be.Kind, kind, err)
	case !strings.Contains(err.Error(), "allow_private"):
		t.Errorf("error %q does not say how to allow it", err)
	}
}

func TestBlockedErrorText(t *testing.T) {
	tests := []struct {
		name string
		err  BlockedError
		want string
	}{
		{name: "literal", err: BlockedError{Host: "10.0.0.1", Addr: netip.MustParseAddr("10.0.0.1"), Kind: "private"}, want: "10.0.0.1 is a private address; "},
		{name: "encoded_literal", err: BlockedError{Host: "0x7f000001", Addr: netip.MustParseAddr("127.0.0.1"), Kind: "loopback"}, want: "0x7f000001 is 127.0.0.1, a loopback address; "},
		{name: "name", err: BlockedError{Host: "intranet.example", Addr: netip.MustParseAddr("10.20.30.40"), Kind: "private"}, want: "intranet.example resolves to 10.20.30.40, a private address; "},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.err.Error()
			if !strings.HasPrefix(got, tc.want) || !strings.HasSuffix(got, "allow_private = true in agentd's [web_commands] config)") {
				t.Errorf("got %q, want %q and the fix", got, tc.want)
			}
		})
	}
}

// TestDialChecksTheSocket: the Control hook refuses even when the address list was not
// checked before (the last line of defence), and the tripwire sees only what is allowed.
func TestDialChecksTheSocket(t *testing.T) {
	ap := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(testutil.AcceptingPort(t)))
	var seen []netip.AddrPort
	g := &Guard{Resolver: fakeDNS, Exempt: func(a netip.AddrPort) bool { return a == ap },
		BeforeConnect: func(a netip.AddrPort) error { seen = append(seen, a); return nil }}
	c, err := g.DialContext(context.Background(), "tcp", ap.String())
	if err != nil {
		t.Fatalf("exempt address: %v", err)
	}
	c.Close()
	if err := g.control("x", netip.AddrPortFrom(ap.Addr(), ap.Port()+1).String()); !errors.Is(err, ErrBlocked) {
		t.Errorf("control on another port = %v, want ErrBlocked", err)
	}
	if _, err := g.DialContext(context.Background(), "udp", ap.String()); err == nil {
		t.Errorf("udp dialled")
	}
	if len(seen) != 1 || seen[0] != ap {
		t.Errorf("connects seen %v, want just %v", seen, ap)
	}
}

// The cases of the web package's former addrKind test, moved here with the guard.
func TestKind(t *testing.T) {
	tests := []struct {
		name string
		ip   string
		want string // "" is public
	}{
		{name: "public_v4", ip: "93.184.215.14", want: ""},
		{name: "public_v6", ip: "2606:2800:21f:cb07:6820:80da:af6b:8b2c", want: ""},
		{name: "mapped_public", ip: "::ffff:93.184.215.14", want: ""},
		{name: "nat64_public", ip: "64:ff9b::5db8:d70e", want: ""},
		{name: "sixtofour_public", ip: "2002:5db8:d70e::1", want: ""},
		{name: "loopback", ip: "127.0.0.1", want: "loopback"},
		{name: "loopback_other", ip: "127.53.0.9", want: "loopback"},
		{name: "loopback_v6", ip: "::1", want: "loopback"},
		{name: "mapped_loopback", ip: "::ffff:127.0.0.1", want: "loopback"},
		{name: "mapped_private", ip: "::ffff:10.1.2.3", want: "private"},
		{name: "private_10", ip: "10.0.0.1", want: "private"},
		{name: "private_172", ip: "172.16.5.4", want: "private"},
		{name: "private_192", ip: "192.168.1.1", want: "private"},
		{name: "not_private_172_32", ip: "172.32.0.1", want: ""},
		{name: "metadata", ip: "169.254.169.254", want: "link-local"},
		{name: "link_local_v6", ip: "fe80::1", want: "link-local"},
		{name: "link_local_v6_zone", ip: "fe80::1%eth0", want: "link-local"},
		{name: "unique_local", ip: "fd00:ec2::254", want: "unique-local"},
		{name: "cgnat", ip: "100.64.0.1", want: "carrier-grade NAT"},
		{name: "cgnat_top", ip: "100.127.255.254", want: "carrier-grade NAT"},
		{name: "not_cgnat", ip: "100.128.0.1", want: ""},
		{name: "multicast", ip: "224.0.0.251", want: "multicast"},
		{name: "multicast_v6", ip: "ff02::1", want: "multicast"},
		{name: "unspecified", ip: "0.0.0.0", want: "unspecified"},
		{name: "unspecified_v6", ip: "::", want: "unspecified"},
		{name: "this_network", ip: "0.1.2.3", want: `"this network"`},
		// The web guard called it "reserved"; it is named for what it is now.
		{name: "broadcast", ip: "255.255.255.255", want: "broadcast"},
		{name: "class_e", ip: "240.0.0.1", want: "reserved"},
		{name: "ietf_protocol", ip: "192.0.0.8", want: "reserved"},
		{name: "sixtofour_relay", ip: "192.88.99.1", want: "reserved"},
		{name: "documentation", ip: "192.0.2.10", want: "documentation"},
		{name: "documentation_2", ip: "198.51.100.7", want: "documentation"},
		{name: "documentation_3", ip: "203.0.113.7", want: "documentation"},
		{name: "documentation_v6", ip: "2001:db8::1", want: "documentation"},
		{name: "documentation_v6_new", ip: "3fff::1", want: "documentation"},
		{name: "benchmarking", ip: "198.18.0.1", want: "benchmarking"},
		{name: "ipv4_compatible", ip: "::7f00:1", want: "IPv4-compatible"},
		{name: "ipv4_translated", ip: "::ffff:0:7f00:1", want: "reserved"},
		{name: "nat64_loopback", ip: "64:ff9b::7f00:1", want: "loopback (via NAT64)"},
		{name: "nat64_local_use", ip: "64:ff9b:1::8.8.8.8", want: "local NAT64"},
		{name: "sixtofour_private", ip: "2002:a00:1::1", want: "private (via 6to4)"},
		{name: "sixtofour_loopback", ip: "2002:7f00:1::1", want: "loopback (via 6to4)"},
		{name: "teredo", ip: "2001:0:4136:e378:8000:63bf:3fff:fdd2", want: "reserved"},
		{name: "discard_v6", ip: "100::1", want: "discard"},
		{name: "srv6_sid", ip: "5f00::1", want: "reserved"},
		{name: "site_local", ip: "fec0::1", want: "site-local"},
		{name: "invalid", ip: "", want: "invalid"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var ip netip.Addr
			if tc.ip != "" {
				ip = netip.MustParseAddr(tc.ip)
			}
			if got := Kind(ip); got != tc.want {
				t.Errorf("Kind(%s) = %q, want %q", tc.ip, got, tc.want)
			}
		})
	}
}
