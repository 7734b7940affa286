package testutil

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
)

// RandomHex returns n random bytes as 2n hex digits: a name, marker or canary no other
// test run shares, so a leak or a collision cannot come from a stale run.
func RandomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b) // never fails: crypto/rand panics rather than return short
	return hex.EncodeToString(b)
}

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
