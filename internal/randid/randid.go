// Package randid is the one maker of random names in agentd: row ids (agents, runs,
// proposals, grants, memories, team runs, schedules), web console tokens and the temp
// names files are written under before their rename. It is a leaf: it imports only the
// standard library.
package randid

import (
	"crypto/rand"
	"encoding/hex"
)

// ID is a new row id: prefix ("a-", "p-", "g-", …) and 12 random hex digits, 48 bits,
// so ids never collide among the rows one daemon keeps.
func ID(prefix string) string { return prefix + Hex(6) }

// Hex is n random bytes as 2n hex digits: 32 make an unguessable token, a few a temp
// name no other writer picks.
func Hex(n int) string {
	b := make([]byte, n)
	rand.Read(b) // never fails: crypto/rand panics rather than return short
	return hex.EncodeToString(b)
}
