package testutil

import (
	"strings"
	"testing"
)

// Shows fails t for each of want that got lacks and each of not that got holds: what a
// reply or a rendered message must say, and what it must not reveal.
func Shows(t testing.TB, got string, want, not []string) {
	t.Helper()
	for _, s := range want {
		if !strings.Contains(got, s) {
			t.Errorf("missing %q in\n%s", s, got)
		}
	}
	for _, s := range not {
		if strings.Contains(got, s) {
			t.Errorf("unexpected %q in\n%s", s, got)
		}
	}
}
