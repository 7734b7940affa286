package cli_test

import (
	"net"
	"path/filepath"
	"testing"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/cmd/agentctl/cli"
	"github.com/agentd/agentd/internal/testutil"
)

// TestNotRunningGolden: when nothing answers at its socket, agentctl names that socket
// and what picked it, what it found at every other place agentd may listen (nothing, a
// stale socket, agentd itself), and what to run. testdata/notrunning/nowhere: agentd
// answers nowhere; .../elsewhere: it answers at $SOCKET, the system service's place.
func TestNotRunningGolden(t *testing.T) {
	f := newFakeDaemon(t)
	tmp := testutil.ShortTempDir(t)
	stale := filepath.Join(tmp, "stale.sock")
	l, err := net.Listen("unix", stale)
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close() // the socket file stays, as an agentd killed with SIGKILL leaves it
	// Without --socket agentctl tries $AGENTD_SOCKET, the first place.
	t.Setenv(api.SocketEnv, filepath.Join(tmp, "env.sock"))
	places := []api.SocketPlace{
		{Path: filepath.Join(tmp, "env.sock"), From: "$" + api.SocketEnv},
		{Path: filepath.Join(tmp, "xdg", "agentd", "agentd.sock"), From: "$XDG_RUNTIME_DIR"},
		{Path: stale, From: "the default without $XDG_RUNTIME_DIR"},
	}
	t.Run("nowhere", func(t *testing.T) {
		cli.SetSocketPlaces(t, places)
		runGoldens(t, f, tmp, "testdata/notrunning/nowhere/*.golden")
	})
	t.Run("elsewhere", func(t *testing.T) {
		cli.SetSocketPlaces(t, append(places, api.SocketPlace{Path: f.sock, From: "the system service, agentd.service"}))
		runGoldens(t, f, tmp, "testdata/notrunning/elsewhere/*.golden")
	})
}
