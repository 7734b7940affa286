package integration

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/randid"
)

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
