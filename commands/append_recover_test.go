package commands

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// After a crash mid-append, the person deciding again sees the file's size, whether the
// text is already at its end, and its tail.
func TestInterruptedAppend(t *testing.T) {
	tests := []struct {
		name, content string // content "" with missing: no file
		missing       bool
		want          []string
	}{
		{"written", "notes\nline two\n", false, []string{"notes.txt is 15 bytes now", "already ends with the text", "deny to avoid adding it twice", `"notes\nline two\n"`}},
		{"not_written", "notes\n", false, []string{"notes.txt is 6 bytes now", "does not end with the text", `"notes\n"`}},
		{"no_file", "", true, []string{"notes.txt does not exist now, so nothing was written"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := t.TempDir()
			if !tt.missing {
				if err := os.WriteFile(filepath.Join(ws, "notes.txt"), []byte(tt.content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			args, _ := json.Marshal(appendToFileArgs{Path: "notes.txt", Text: "line two\n"})
			got := InterruptedAppend(ws, args)
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("note lacks %q:\n%s", w, got)
				}
			}
		})
	}
	// The tail is bounded, and a path out of the workspace shows nothing.
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "big.txt"), []byte(strings.Repeat("x", 5000)), 0o644); err != nil {
		t.Fatal(err)
	}
	args, _ := json.Marshal(appendToFileArgs{Path: "big.txt", Text: "y"})
	if got := InterruptedAppend(ws, args); !strings.Contains(got, "last 200 bytes") || len(got) > 600 {
		t.Errorf("big file note (%d bytes): %s", len(got), got)
	}
	args, _ = json.Marshal(appendToFileArgs{Path: "../outside.txt", Text: "y"})
	if got := InterruptedAppend(ws, args); got != "" {
		t.Errorf("a path out of the workspace gave %q, want nothing", got)
	}
}
