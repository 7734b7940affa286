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
