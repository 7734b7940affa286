package randid

import (
	"strings"
	"testing"
)

// TestIDsAreFreshHexAfterTheirPrefix: an id is its prefix and 12 hex digits, a Hex of n
// bytes is 2n hex digits, and no two of many are the same.
func TestIDsAreFreshHexAfterTheirPrefix(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		id := ID("p-")
		rest, ok := strings.CutPrefix(id, "p-")
		if !ok || len(rest) != 12 || strings.Trim(rest, "0123456789abcdef") != "" {
			t.Fatalf("ID(%q) = %q, want the prefix and 12 hex digits", "p-", id)
		}
		if seen[id] {
			t.Fatalf("ID made %q twice", id)
		}
		seen[id] = true
	}
	if h := Hex(32); len(h) != 64 || strings.Trim(h, "0123456789abcdef") != "" {
		t.Errorf("Hex(32) = %q, want 64 hex digits", h)
	}
}
