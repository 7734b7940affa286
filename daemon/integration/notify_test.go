package integration

import (
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/ollamatest"
	"github.com/agentd/agentd/internal/testutil"
)

// TestSystemdNotify runs the real agentd as a Type=notify unit would: with NOTIFY_SOCKET
// set, it sends READY=1 once its API socket answers and STOPPING=1 on SIGTERM.
func TestSystemdNotify(t *testing.T) {
	path := filepath.Join(testutil.ShortTempDir(t), "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	msgs := make(chan string, 16)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, _, err := conn.ReadFromUnix(buf)
			if err != nil {
				close(msgs)
				return
			}
			msgs <- string(buf[:n])
		}
	}()
	next := func(want string) {
		t.Helper()
		select {
		case m := <-msgs:
			if !strings.Contains(m, want) {
				t.Fatalf("notification %q, want %s", m, want)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("no %s notification within 30s", want)
		}
	}

	fake := ollamatest.NewFake(t)
	d := newDaemon(t, daemonOpts{binary: true, config: configText(fake.URL(), 4096, nil), env: []string{"NOTIFY_SOCKET=" + path}})
	d.start() // returns once the socket answers; READY=1 was sent just before
	next("READY=1")
	if code, _ := d.term(10 * time.Second); code != 0 {
		t.Fatalf("exit code %d after SIGTERM", code)
	}
	next("STOPPING=1")
}
