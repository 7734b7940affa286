package commands

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// hostileNames are file names a cloned repo or a shell command can create: each must be
// listed as one line, its control, bidi and zero-width characters shown as escapes.
var hostileNames = map[string]string{
	"esc\x1b[2Jname":       `esc\x1b[2Jname`,
	"two\nlines":           `two\x0alines`,
	"tab\there":            `tab\x09here`,
	"cr\rover":             `cr\x0dover`,
	"exe\u202etxt.sh":      `exe\u202etxt.sh`,
	"zero\u200bwidth":      `zero\u200bwidth`,
	"not-utf8-\xff":        `not-utf8-\xff`,
	"tag\U000E0041":        `tag\U000e0041`,
	"sep\u2028ara":         `sep\u2028ara`,
	"bell\x07":             `bell\x07`,
	"plain-ünïcode-日本.txt": "plain-ünïcode-日本.txt",
}

func hostileWorkspace(t *testing.T) string {
	t.Helper()
	ws := t.TempDir()
	for name := range hostileNames {
		if err := os.WriteFile(filepath.Join(ws, name), []byte("needle\there\x1b[31m\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return ws
}

func TestListFolderEscapesNames(t *testing.T) {
	ws := hostileWorkspace(t)
	out, err := run(t, "list_folder", ws, map[string]any{"path": "."}, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	checkOneNamePerLine(t, out, "")
}

func TestSearchFilesEscapesNamesAndLines(t *testing.T) {
	ws := hostileWorkspace(t)
	out, err := run(t, "search_files", ws, map[string]any{"pattern": "*"}, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	checkOneNamePerLine(t, out, "")

	out, err = run(t, "search_files", ws, map[string]any{"pattern": "*", "text": "needle"}, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	checkOneNamePerLine(t, out, ":1: needle\there\\x1b[31m")
}

// checkOneNamePerLine checks that out lists every hostile name once, escaped, each line
// ending in suffix, and holds no raw control or invisible character but tabs in suffix.
func checkOneNamePerLine(t *testing.T, out, suffix string) {
	t.Helper()
	lines := strings.Split(out, "\n")
	if len(lines) != len(hostileNames) {
		t.Fatalf("%d lines for %d files:\n%s", len(lines), len(hostileNames), out)
	}
	want := map[string]bool{}
	for _, shown := range hostileNames {
		want[shown+suffix] = true
	}
	for _, l := range lines {
		if !want[l] {
			t.Errorf("unexpected line %q", l)
		}
		for _, r := range strings.ReplaceAll(l, "\t", "") {
			if r < 0x20 || r == 0x7f || r == 0x202e || r == 0x200b || r == 0x2028 || r == 0xfffd {
				t.Errorf("line %q keeps %U raw", l, r)
			}
		}
	}
}
