package config

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

// TestLoggerEscapesText checks both formats, at the configured level and at a level that
// may change: a command name or an error carrying ESC, a newline or U+202E cannot forge a
// log line or reorder it.
func TestLoggerEscapesText(t *testing.T) {
	for _, format := range []string{"text", "json"} {
		for _, level := range []*slog.LevelVar{nil, new(slog.LevelVar)} {
			t.Run(fmt.Sprintf("%s_level_var_%t", format, level != nil), func(t *testing.T) {
				var b bytes.Buffer
				l := LogConfig{Format: format, Level: "info"}
				log := l.Logger(&b, level)
				log.With("agent", "bob\u202e").Info("ran \x1b[2J", "command", "ls\nlevel=ERROR msg=forged",
					"err", errors.New("no\u200bpe"))
				out := b.String()
				if strings.Count(out, "\n") != 1 {
					t.Fatalf("one record made %d lines:\n%s", strings.Count(out, "\n"), out)
				}
				for _, raw := range []string{"\x1b", "\u202e", "\u200b"} {
					if strings.Contains(out, raw) {
						t.Errorf("log keeps %q raw: %s", raw, out)
					}
				}
				if !strings.Contains(out, `u202e`) || !strings.Contains(out, `x1b[2J`) {
					t.Errorf("log lacks the escapes: %s", out)
				}
			})
		}
	}
}
