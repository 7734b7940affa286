package netguard

import (
	"net/netip"
	"testing"
)

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
