package checkpoint

import (
	"os"
	"path/filepath"
	"testing"
)

// A put back restores only the paths named, as the before checkpoint holds them: a file
// created is removed, one changed or removed gets its content back, one replaced by a
// renamed folder is made again inside a folder holding only it; every other change of
// the step stays.
func TestPutBackRestoresOnlyTheNamedPaths(t *testing.T) {
	ws := t.TempDir()
	s := openStore(t, Options{})
	writeFiles(t, ws, map[string]string{"keep.txt": "old\n", "config/app.toml": "safe\n", "staging/x.toml": "mine\n", "locked/a.env": "A\n"})
	before := mustCheckpoint(t, s, ws)
	writeFiles(t, ws, map[string]string{"keep.txt": "new\n", "new.toml": "evil\n", "deep/er/b.toml": "evil\n"})
	if err := os.RemoveAll(filepath.Join(ws, "config")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(ws, "staging"), filepath.Join(ws, "config")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(ws, "locked", "a.env")); err != nil {
		t.Fatal(err)
	}
	after := mustCheckpoint(t, s, ws)
	r, err := s.PutBack(ctx, ws, before.ID, after.ID, []string{"new.toml", "deep/er/b.toml", "config/app.toml", "config/x.toml", "locked/a.env"})
	if err != nil {
		t.Fatal(err)
	}
	if r.Diff.Files == 0 {
		t.Fatalf("put back changed nothing: %+v", r.Diff)
	}
	want := map[string]string{"keep.txt": "new\n", "config/app.toml": "safe\n", "locked/a.env": "A\n"}
	for p, body := range want {
		if b, err := os.ReadFile(filepath.Join(ws, p)); err != nil || string(b) != body {
			t.Errorf("%s after put back: %q, %v; want %q", p, b, err, body)
		}
	}
	for _, p := range []string{"new.toml", "deep/er/b.toml", "config/x.toml", "staging"} {
		if _, err := os.Lstat(filepath.Join(ws, p)); !os.IsNotExist(err) {
			t.Errorf("%s after put back: %v, want it gone", p, err)
		}
	}
	verifyStore(t, s)
}
