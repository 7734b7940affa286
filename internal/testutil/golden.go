package testutil

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

// update is the -update flag of every test binary that imports this package: with it,
// Golden rewrites the golden files from the current output instead of comparing.
var update = flag.Bool("update", false, "rewrite the golden files in testdata/ from the current output")

// Updating reports whether the test runs with -update.
func Updating() bool { return *update }

// Golden compares got with the file at path (relative to the test's package, usually
// under testdata/). With -update it writes got there instead, creating the folders.
func Golden(t testing.TB, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run `go test -update` in the package to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (run `go test -update` if the change is intended)\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// GoldenJSON is Golden for v as JSON indented by two spaces, with a final newline and
// without HTML escaping, so "<" and "&" read as themselves in the file.
func GoldenJSON(t testing.TB, path string, v any) {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	Golden(t, path, buf.Bytes())
}
