package testutil

import (
	"os"
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
