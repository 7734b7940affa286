package shell

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/internal/testutil"
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
		`cat /proc/net/route /etc/resolv.conf; grep CapEff /proc/self/status; grep -F -- "-- 10.0.2.100" /proc/net/fib_trie`), time.Minute)
	if err != nil {
		t.Fatalf("%v\n%s", err, got)
	}
	checkResult(t, got, "", []string{"tap0\t00000000\t0202000A\t", "nameserver 10.0.2.3\n",
		"CapEff:\t0000000000000000", "|-- 10.0.2.100\n"}, nil)
}

// onlineLine prints "online" when the sandbox has a way out (slirp4netns's tap0 routes),
// else "offline"; nothing leaves the machine.
const onlineLine = "grep -q '^tap0' /proc/net/route && echo online || echo offline"

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

// TestNetworkSandboxReachesNoHostLoopbackNorAbstractSocket: granted the network, a
// sandbox reaches neither a host service on 127.0.0.1 (directly, or through slirp4netns's
// gateway 10.0.2.2) nor a host abstract unix socket (X11's, a session bus), which belong
// to the host's network namespace. The same line run unsandboxed reaches both, so the
// probe itself works.
func TestNetworkSandboxReachesNoHostLoopbackNorAbstractSocket(t *testing.T) {
	c := mustShell(t, Options{Sandbox: SandboxBwrap, Bwrap: slirpHere(t), Network: true})
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	abstract, err := net.Listen("unix", fmt.Sprintf("@agentd-netns-test-%d", os.Getpid()))
	if err != nil {
		t.Fatal(err)
	}
	for _, ln := range []net.Listener{tcp, abstract} {
		defer ln.Close()
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				c.Write([]byte("HOST-SERVICE-ANSWERED\n"))
				c.Close()
			}
		}()
	}
	port := tcp.Addr().(*net.TCPAddr).Port
	probe := fmt.Sprintf(`import socket
for name, family, addr in [("loopback", socket.AF_INET, ("127.0.0.1", %d)), ("gateway", socket.AF_INET, ("10.0.2.2", %d)), ("abstract", socket.AF_UNIX, "\0%s")]:
    try:
        s = socket.socket(family)
        s.settimeout(5)
        s.connect(addr)
        print(name, s.recv(100).decode().strip())
    except OSError as e:
        print(name, "refused:", e)`, port, port, abstract.Addr().String()[1:])
	line := "python3 -c '" + probe + "'"
	got, err := run(context.Background(), t, c, workspace(t), shellLine(line), time.Minute)
	if err != nil {
		t.Fatalf("%v\n%s", err, got)
	}
	checkResult(t, got, "", []string{"loopback refused", "gateway refused", "abstract refused"}, []string{"ANSWERED"})
	ctl, _ := run(context.Background(), t, mustShell(t, Options{Sandbox: SandboxNone}), workspace(t), shellLine(line), time.Minute)
	checkResult(t, ctl, "", []string{"loopback HOST-SERVICE-ANSWERED", "abstract HOST-SERVICE-ANSWERED"}, nil)
}

// TestCancelledNetworkCommandLeavesNoSlirp: a command with the network that is cancelled
// while it runs takes its slirp4netns with it.
func TestCancelledNetworkCommandLeavesNoSlirp(t *testing.T) {
	c := mustShell(t, Options{Sandbox: SandboxBwrap, Bwrap: slirpHere(t), Network: true})
	ws := workspace(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := run(ctx, t, c, ws, shellLine("touch started; sleep 7.4142"), time.Minute)
		done <- err
	}()
	var slirps []string
	if !testutil.Wait(time.Minute, func() bool {
		_, err := os.Stat(filepath.Join(ws, "started"))
		slirps = ourSlirps()
		return err == nil && len(slirps) > 0
	}) {
		cancel()
		t.Fatalf("the command did not start with a slirp4netns of ours (%v)", slirps)
	}
	cancel()
	if err := <-done; err == nil {
		t.Error("a cancelled command returned no error")
	}
	if left := ourSlirps(); len(left) > 0 {
		t.Errorf("slirp4netns %v outlived its command:\n%s", left, describeProcesses(left))
	}
	waitGone(t, "7.4142")
}

// ourSlirps are the slirp4netns processes this test process started.
func ourSlirps() []string {
	var ours []string
	for _, p := range testutil.ProcessesWith("slirp4netns") {
		if pid, err := strconv.Atoi(p); err == nil {
			if ppid, ok := parentOf(pid); ok && ppid == os.Getpid() {
				ours = append(ours, p)
			}
		}
	}
	return ours
}

// TestNetworkWithoutSlirpRefuses: where slirp4netns is missing, a command granted the
// network is refused with the fix, and doctor's check says the same; the sandbox does not
// fall back to the host's network. A run offline still runs.
func TestNetworkWithoutSlirpRefuses(t *testing.T) {
	bwrap := bwrapHere(t)
	t.Setenv("PATH", t.TempDir()) // no slirp4netns on it
	o := Options{Sandbox: SandboxBwrap, Bwrap: bwrap, Network: true}
	c := mustShell(t, o)
	ws := workspace(t)
	out, err := run(context.Background(), t, c, ws, shellLine("echo ran"), time.Minute)
	if err == nil || !strings.Contains(err.Error(), "apt-get install slirp4netns") || strings.Contains(out, "ran") {
		t.Errorf("got %q, %v; want a refusal naming apt-get install slirp4netns", out, err)
	}
	if err := CheckNetwork(o); err == nil || !strings.Contains(err.Error(), "apt-get install slirp4netns") {
		t.Errorf("CheckNetwork: %v; want the fix", err)
	}
	if line, _ := DescribeSandbox(o); !strings.Contains(line, "slirp4netns is not installed") {
		t.Errorf("DescribeSandbox: %q; want it to say slirp4netns is missing", line)
	}
	if out, err := runAs(t, c, ws, commands.Profile{Offline: true}, "echo ran"); err != nil || !strings.Contains(out, "ran") {
		t.Errorf("offline: got %q, %v; want it run", out, err)
	}
}
