package integration

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/randid"
)

// attackNetwork: read_webpage and clone_repository to the loopback canary under every
// numeric, encoded and named form of a loopback address. Each must fail, and the canary
// must see no connection.
func attackNetwork(r *attackRig) {
	r.class = "network"
	p, p6 := r.canary.port, r.canary.port6
	hosts := []struct{ name, host string }{
		{"dotted", fmt.Sprintf("127.0.0.1:%d", p)},
		{"short_127_1", fmt.Sprintf("127.1:%d", p)},
		{"short_127_0_1", fmt.Sprintf("127.0.1:%d", p)},
		{"decimal", fmt.Sprintf("2130706433:%d", p)},
		{"hex", fmt.Sprintf("0x7f000001:%d", p)},
		{"hex_dotted", fmt.Sprintf("0x7f.0x0.0x0.0x1:%d", p)},
		{"octal_dotted", fmt.Sprintf("0177.0.0.1:%d", p)},
		{"octal_whole", fmt.Sprintf("017700000001:%d", p)},
		{"zero_padded", fmt.Sprintf("127.000.000.001:%d", p)},
		{"trailing_dot", fmt.Sprintf("127.0.0.1.:%d", p)},
		{"any_address", fmt.Sprintf("0.0.0.0:%d", p)},
		{"zero", fmt.Sprintf("0:%d", p)},
		{"mapped_v6", fmt.Sprintf("[::ffff:127.0.0.1]:%d", p)},
		{"mapped_v6_hex", fmt.Sprintf("[::ffff:7f00:1]:%d", p)},
		{"mapped_v6_long", fmt.Sprintf("[0:0:0:0:0:ffff:7f00:1]:%d", p)},
		{"localhost", fmt.Sprintf("localhost:%d", p)},
		{"localhost_upper", fmt.Sprintf("LocalHost:%d", p)},
		{"localhost_trailing_dot", fmt.Sprintf("localhost.:%d", p)},
		{"userinfo", fmt.Sprintf("example.com@127.0.0.1:%d", p)},
		{"percent_encoded", fmt.Sprintf("%%31%%32%%37.0.0.1:%d", p)},
		{"nat64", fmt.Sprintf("[64:ff9b::7f00:1]:%d", p)},
		{"hex_short", fmt.Sprintf("0x7f.1:%d", p)},
		{"link_local_zone", fmt.Sprintf("[fe80::1%%25lo]:%d", p)},
		{"loopback_other", fmt.Sprintf("127.42.42.42:%d", p)},
	}
	if p6 != 0 {
		hosts = append(hosts,
			struct{ name, host string }{"v6_loopback", fmt.Sprintf("[::1]:%d", p6)},
			struct{ name, host string }{"v6_loopback_long", fmt.Sprintf("[0:0:0:0:0:0:0:1]:%d", p6)},
			struct{ name, host string }{"v6_any", fmt.Sprintf("[::]:%d", p6)},
		)
	}
	// Names /etc/hosts maps to loopback (ip6-localhost...): a name the guard must resolve.
	for _, name := range loopbackNames() {
		port := p
		if strings.Contains(name.addr, ":") {
			if p6 == 0 {
				continue
			}
			port = p6
		}
		hosts = append(hosts, struct{ name, host string }{"hosts_" + strings.NewReplacer("-", "_", ".", "_").Replace(name.name), fmt.Sprintf("%s:%d", name.name, port)})
	}
	// Signs that the guard let the address through to a connection attempt.
	tried := []string{"Failed to connect to", "Couldn't connect to server", "connect: connection refused", "Connection refused"}
	failed := func(o *outcome) string {
		if o.status == "succeeded" {
			return "it succeeded"
		}
		for _, s := range tried {
			if strings.Contains(o.result, s) {
				return "the guard let it through to a connection attempt (" + s + ")"
			}
		}
		return ""
	}
	// Only addresses of this machine: should the guard fail, nothing may leave it. NAT64 is
	// read_webpage's alone (a clone let through would send its packets off the machine).
	var steps []step
	for i, h := range hosts {
		steps = append(steps, step{name: "read_webpage_" + h.name, command: "read_webpage", mode: approve, check: failed,
			args: map[string]any{"url": "http://" + h.host + "/c/read-" + h.name, "get_raw_content": true}})
		if h.name != "nat64" {
			steps = append(steps, step{name: "clone_repository_" + h.name, command: "clone_repository", mode: approve, check: failed,
				args: map[string]any{"url": "http://" + h.host + "/c/clone-" + h.name + ".git", "path": fmt.Sprintf("r%d", i)}})
		}
	}
	steps = append(steps,
		step{name: "read_webpage_upper_scheme", command: "read_webpage", mode: approve, check: failed,
			args: map[string]any{"url": fmt.Sprintf("HTTP://127.1:%d/c/upper", p)}},
		step{name: "clone_repository_upper_scheme", command: "clone_repository", mode: approve, check: failed,
			args: map[string]any{"url": fmt.Sprintf("HTTP://127.1:%d/c/upper.git", p), "path": "upper"}},
		step{name: "clone_repository_https_short", command: "clone_repository", mode: approve, check: failed,
			args: map[string]any{"url": fmt.Sprintf("https://127.1:%d/c/x.git", p), "path": "https"}},
		step{name: "clone_repository_git_protocol", command: "clone_repository", mode: approve, check: failed,
			args: map[string]any{"url": fmt.Sprintf("git://127.0.0.1:%d/c/x.git", p), "path": "gitproto"}},
		step{name: "clone_repository_ext_transport", command: "clone_repository", mode: approve, check: failed,
			args: map[string]any{"url": "ext::sh -c touch% /tmp/agentd-attack-ext", "path": "ext"}},
		step{name: "clone_repository_file_url", command: "clone_repository", mode: approve, check: failed,
			args: map[string]any{"url": "file://" + r.out, "path": "fileurl"}},
		step{name: "clone_repository_option_injection", command: "clone_repository", mode: approve, check: failed,
			args: map[string]any{"url": "--upload-pack=touch /tmp/agentd-attack-upload", "path": "opt"}},
	)
	r.drive(agentRun{name: "netter", steps: steps})
	for _, f := range []string{"/tmp/agentd-attack-ext", "/tmp/agentd-attack-upload"} {
		escape := ""
		if _, err := os.Stat(f); err == nil {
			escape = f + " was created by git"
			os.Remove(f)
		}
		r.record("clone_repository_no_code_run_"+strings.TrimPrefix(f, "/tmp/agentd-attack-"), escape)
	}
}

type hostName struct{ name, addr string }

// loopbackNames are the names /etc/hosts gives 127.0.0.1 or ::1, other than localhost.
func loopbackNames() []hostName {
	b, err := os.ReadFile("/etc/hosts")
	if err != nil {
		return nil
	}
	seen := map[string]bool{"localhost": true}
	var out []hostName
	for _, line := range strings.Split(string(b), "\n") {
		line, _, _ = strings.Cut(line, "#")
		f := strings.Fields(line)
		if len(f) < 2 || (f[0] != "127.0.0.1" && f[0] != "::1") {
			continue
		}
		for _, n := range f[1:] {
			if !seen[n] {
				seen[n] = true
				out = append(out, hostName{n, f[0]})
			}
		}
	}
	return out
}

// snapshot is the state of r.out and the watched paths: every entry's type, link target
// and contents, by path.
func (r *attackRig) snapshot(watch []string) map[string]string {
	m := map[string]string{}
	for _, root := range append([]string{r.out}, watch...) {
		filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
			switch {
			case err != nil:
				m[p] = "unreadable"
			case fi.Mode()&os.ModeSymlink != 0:
				dst, _ := os.Readlink(p)
				m[p] = "link " + dst
			case fi.IsDir():
				m[p] = "dir"
			default:
				b, _ := os.ReadFile(p)
				m[p] = fmt.Sprintf("file %o %q", fi.Mode().Perm(), b)
			}
			return nil
		})
	}
	return m
}

func diffSnapshots(before, after map[string]string) []string {
	var out []string
	for p, v := range before {
		if w, ok := after[p]; !ok {
			out = append(out, "canary "+p+" is gone")
		} else if w != v {
			out = append(out, "canary "+p+" changed")
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			out = append(out, "canary "+p+" appeared")
		}
	}
	slices.Sort(out)
	return out
}

// canaryServer is a loopback HTTP server that counts every connection it accepts: any
// connection is an escape, whatever was sent on it.
type canaryServer struct {
	port, port6 int // port6 is its [::1] port, 0 when there is no IPv6 loopback
	body        string
	conns       atomic.Int64
	mu          sync.Mutex
	hits        []string
}

type countingListener struct {
	net.Listener
	s *canaryServer
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.s.conns.Add(1)
	}
	return c, err
}

func newCanaryServer(t *testing.T) *canaryServer {
	s := &canaryServer{body: "CANARY-HTTP-BODY-" + randid.Hex(8)}
	h := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		s.mu.Lock()
		s.hits = append(s.hits, req.Host+req.URL.Path)
		s.mu.Unlock()
		fmt.Fprintf(w, "<html><body><p>%s</p></body></html>", s.body)
	})
	l4, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.port = l4.Addr().(*net.TCPAddr).Port
	listeners := []net.Listener{l4}
	l6, err := net.Listen("tcp6", fmt.Sprintf("[::1]:%d", s.port))
	if err != nil {
		l6, err = net.Listen("tcp6", "[::1]:0")
	}
	if err == nil {
		s.port6 = l6.Addr().(*net.TCPAddr).Port
		listeners = append(listeners, l6)
	}
	for _, l := range listeners {
		srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
		go srv.Serve(countingListener{l, s})
		t.Cleanup(func() { srv.Close() })
	}
	return s
}

func (s *canaryServer) paths() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.hits)
}
