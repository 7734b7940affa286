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

// A sandboxed program cannot write a new file or folder under /dev, a tmpfs without a
// bound that the sandbox of a daemon that is not root owns, and /dev/shm stops at its
// bound; the devices and descriptors programs use stay as they were: redirections to
// /dev/null and between descriptors, /dev/fd and /proc/self/fd, /dev/urandom and
// python's os.urandom, git. It runs as whoever runs the suite, and again as a daemon
// that is not root.
func TestSandboxDevIsReadOnlyAndItsDevicesStillWork(t *testing.T) {
	bwrap := bwrapHere(t)
	c := mustShell(t, Options{Sandbox: SandboxBwrap, Bwrap: bwrap, Limits: Limits{Tmp: 1 << 20}})
	ws := workspace(t)
	line := `echo x > /dev/big 2>/dev/null && echo wrote-dev-big
mkdir /dev/newdir 2>/dev/null && echo made-dev-dir
head -c 2097152 /dev/zero > /dev/shm/big 2>/dev/null || echo "shm-stopped-at $(wc -c < /dev/shm/big)"
echo gone > /dev/null && echo null-ok
(echo to-stderr >&2) 2>&1 | grep -q to-stderr && echo stderr-joined
echo in-a-file > f && exec 3<f && cat /dev/fd/3 /proc/self/fd/3 | grep -c in-a-file
head -c 16 /dev/urandom | wc -c
python3 -c 'import os; print("urandom", len(os.urandom(16)))'
git init -q r 2>&1 && echo git-ok`
	got := mustRun(t, c, ws, line, 30*time.Second)
	checkResult(t, got, ws, []string{"shm-stopped-at 1048576", "null-ok", "stderr-joined", "2\n16\n", "urandom 16", "git-ok"},
		[]string{"wrote-dev-big", "made-dev-dir"})
	testutil.AsUnprivileged(t) // again as uid 65534, when the suite runs as root
}
