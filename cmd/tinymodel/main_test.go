package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// The note after writing must say the model is noise and that creating it in Ollama
// is optional, not read like a step the user must take.
func TestRunNoteGolden(t *testing.T) {
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	if err := run([]string{"-o", dir}, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"tiny.gguf", "Modelfile"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("%s not written: %v", name, err)
		}
	}
	if want := filepath.Join(dir, "tiny.gguf") + "\n" + filepath.Join(dir, "Modelfile") + "\n"; stdout.String() != want {
		t.Errorf("stdout = %q, want the two paths %q", stdout.String(), want)
	}
	got := strings.ReplaceAll(stderr.String(), dir, "DIR")
	golden := filepath.Join("testdata", "note.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("stderr:\n%s\nwant (%s):\n%s", got, golden, want)
	}
	if strings.Contains(got, "create it with") {
		t.Errorf("the note still reads like a required step:\n%s", got)
	}
}
