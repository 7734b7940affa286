package shell

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/agentd/agentd/commands"
)

// BenchmarkSandboxNetworkOverhead runs `true` in the sandbox of an agent granted the
// network, offline (an effect preview's profile) and with the network, in turn, and
// reports each per command and what the network costs.
func BenchmarkSandboxNetworkOverhead(b *testing.B) {
	c := mustShell(b, Options{Sandbox: SandboxBwrap, Bwrap: bwrapHere(b), Network: true})
	ws := workspace(b)
	var off, on time.Duration
	for b.Loop() {
		start := time.Now()
		if out, err := runAs(b, c, ws, commands.Profile{Offline: true}, "true"); err != nil {
			b.Fatal(err, out)
		}
		mid := time.Now()
		if out, err := runAs(b, c, ws, commands.Profile{}, "true"); err != nil {
			b.Fatal(err, out)
		}
		off, on = off+mid.Sub(start), on+time.Since(mid)
	}
	n := float64(b.N)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) / n }
	b.ReportMetric(ms(off), "offline-ms/cmd")
	b.ReportMetric(ms(on), "network-ms/cmd")
	b.ReportMetric(ms(on-off), "network-overhead-ms/cmd")
}

// TestNetworkSandboxHasItsOwnNetwork: a sandbox granted the network has a namespace of its
// own with slirp4netns's interface (an address, a default route through it, its DNS in
// resolv.conf), and every other confinement kept. Nothing leaves the machine.
func TestNetworkSandboxHasItsOwnNetwork(t *testing.T) {
	c := mustShell(t, Options{Sandbox: SandboxBwrap, Bwrap: slirpHere(t), Network: true})
	if d := c.Spec().Description; d != "Run a shell command" {
		t.Errorf("description %q; want no promise of being offline", d)
	}
	got, err := run(context.Background(), t, c, workspace(t), shellLine(
		`cat /proc/net/route /etc/resolv.conf; grep CapEff /proc/self/status; ip -4 -o addr show tap0`), time.Minute)
	if err != nil {
		t.Fatalf("%v\n%s", err, got)
	}
	checkResult(t, got, "", []string{"tap0\t00000000\t0202000A\t", "nameserver 10.0.2.3\n",
		"CapEff:\t0000000000000000", "inet 10.0.2.100/24"}, nil)
}

// slirpHere returns the bwrap binary when a sandbox with the network works here: bwrap
// and slirp4netns installed (scripts/test.sh installs both) and able to run.
func slirpHere(t testing.TB) string {
	t.Helper()
	bwrap := bwrapHere(t)
	if err := CheckNetwork(Options{Sandbox: SandboxBwrap, Bwrap: bwrap, Network: true}); err != nil {
		if os.Getenv("AGENTD_REQUIRE_SANDBOX") == "1" {
			t.Fatalf("AGENTD_REQUIRE_SANDBOX=1 but %v", err)
		}
		t.Skipf("network sandbox not tested: %v", err)
	}
	return bwrap
}
