package shell

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/testutil"
)

// A sandboxed program writes in its workspace, /tmp, /dev/shm and its HOME, each
// bounded, and not in the root bwrap makes, a tmpfs without a bound which the sandbox of
// a daemon that is not root owns, nor in a hidden folder, one too: both are read-only.
// It runs as whoever runs the suite, and again as a daemon that is not root.
func TestSandboxRootAndHiddenFoldersAreReadOnly(t *testing.T) {
	bwrap := bwrapHere(t)
	hidden := testutil.ResolvedTempDir(t)
	c := mustShell(t, Options{Sandbox: SandboxBwrap, Bwrap: bwrap, HidePaths: []string{hidden}})
	ws := workspace(t)
	line := `for p in /big /sandbox-new/big ` + filepath.Join(hidden, "big") + `; do
  mkdir -p "$(dirname $p)" 2>/dev/null; head -c 1048576 /dev/zero > $p 2>/dev/null && echo "wrote $p"
done
head -c 1048576 /dev/zero > /dev/null && echo x > /tmp/a && echo x > /dev/shm/a && echo x > "$HOME/a" && echo x > in-ws && echo wrote-the-writable-places`
	got := mustRun(t, c, ws, line, 30*time.Second)
	checkResult(t, got, ws, []string{"wrote-the-writable-places"}, []string{"wrote /"})
	testutil.AsUnprivileged(t) // again as uid 65534, when the suite runs as root
}
