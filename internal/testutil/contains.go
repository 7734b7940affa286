package testutil

import (
	"strings"
	"testing"
)

// CheckContains fails t for each string of want that got lacks and each of notWant that
// it holds, naming what got is ("output", "the note") and showing it whole, so one run
// reports every missing and every unwanted piece at once.
func CheckContains(t testing.TB, what, got string, want, notWant []string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, got)
		}
	}
	for _, w := range notWant {
		if strings.Contains(got, w) {
			t.Errorf("%s has %q, which it should leave out:\n%s", what, w, got)
		}
	}
}

// WantErr checks err against want, the text a table case expects its error to hold: with
// want set, err must hold it and WantErr reports true (the case ends there); with want
// empty, err must be nil.
func WantErr(t testing.TB, err error, want string) bool {
	t.Helper()
	if want == "" {
		if err != nil {
			t.Fatalf("error = %v, want none", err)
		}
		return false
	}
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error = %v, want one saying %q", err, want)
	}
	return true
}
