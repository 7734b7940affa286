package cli

import (
	"strings"
	"testing"
)

func TestSafeWriterEscapesControls(t *testing.T) {
	var b strings.Builder
	safeWriter{&b}.Write([]byte("ok\tline\n\x1b[2Jred\rx\u009bé"))
	if got, want := b.String(), "ok\tline\n\\x1b[2Jred\\x0dx\\u009bé"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}
