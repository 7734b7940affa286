package checkpoint

import (
	"os"
	"path/filepath"
	"testing"
)

// As root, a restore gives every file, folder, symlink and fifo back the owner it had
// at the checkpoint, rewritten or only given away since.
func TestRestorePutsBackOwnersAsRoot(t *testing.T) {
	if !mayChown {
		t.Skip("only root may give files back their owners")
	}
	ws := t.TempDir()
	s := openStore(t, Options{})
	writeFiles(t, ws, map[string]string{"a.txt": "one\n", "sub/b.txt": "bee\n"})
	os.Symlink("a.txt", filepath.Join(ws, "sub/link"))
	for i, p := range []string{"a.txt", "sub", "sub/b.txt", "sub/link"} {
		if err := os.Lchown(filepath.Join(ws, p), 1200+i, 1300+i); err != nil {
			t.Fatal(err)
		}
	}
	want := listing(t, ws)
	c := mustCheckpoint(t, s, ws)
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("changed\n"), 0o644) // rewritten as root
	for _, p := range []string{"sub", "sub/b.txt", "sub/link"} {
		os.Lchown(filepath.Join(ws, p), 0, 0) // given away
	}
	if _, err := s.Restore(ctx, ws, c.ID); err != nil {
		t.Fatal(err)
	}
	sameListing(t, "after restore", listing(t, ws), want)
}
