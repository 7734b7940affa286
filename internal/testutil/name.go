package testutil

import (
	"os"
	"path/filepath"
	"testing"
)

// ShortTempDir returns a fresh directory with a short path, removed when the test ends.
// A unix socket's path must fit in about 100 bytes, which t.TempDir's names (the test's
// name, nested) can exceed.
func ShortTempDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "agentd-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// ResolvedTempDir returns a fresh directory, removed when the test ends, with its symlinks
// resolved (the temp folder may sit behind a link), as commands.ResolvePath reports a
// workspace and the daemon stores one.
func ResolvedTempDir(t testing.TB) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return dir
}
