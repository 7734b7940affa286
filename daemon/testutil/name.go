package testutil

import (
	"crypto/rand"
	"encoding/hex"
)

// RandomHex returns n random bytes as 2n hex digits: a name, marker or canary no other
// test run shares, so a leak or a collision cannot come from a stale run.
func RandomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b) // never fails: crypto/rand panics rather than return short
	return hex.EncodeToString(b)
}
