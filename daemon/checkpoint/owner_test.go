package checkpoint

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// As root, a restore gives every file, folder, symlink and fifo back the owner it had
// at the checkpoint, rewritten or only given away since.
func TestRestorePutsBackOwnersAsRoot(t *testing.T) {
	if !mayChown {
		t.Skip("only root may give files back their owners")
	}
	s, ws := storeWithFiles(t, map[string]string{"a.txt": "one\n", "sub/b.txt": "bee\n"})
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
	mustRestore(t, s, ws, c.ID)
	sameListing(t, "after restore", listing(t, ws), want)
}

// A restore puts back the extended attributes files and folders had: a value changed
// since is set back, a name added since removed, a name removed since set again.
func TestRestorePutsBackExtendedAttributes(t *testing.T) {
	s, ws := storeWithFiles(t, map[string]string{"a.txt": "one\n", "sub/b.txt": "bee\n"})
	set := func(p, name, v string) {
		if err := unix.Setxattr(filepath.Join(ws, p), name, []byte(v), 0); err != nil {
			t.Skipf("no user extended attributes here: %v", err)
		}
	}
	set("a.txt", "user.kept", "1")
	set("sub", "user.folder", "f")
	set("sub/b.txt", "user.gone", "g")
	c := mustCheckpoint(t, s, ws)
	set("a.txt", "user.kept", "changed")
	set("a.txt", "user.added", "x")
	unix.Removexattr(filepath.Join(ws, "sub"), "user.folder")
	os.WriteFile(filepath.Join(ws, "sub/b.txt"), []byte("rewritten\n"), 0o644)
	unix.Removexattr(filepath.Join(ws, "sub/b.txt"), "user.gone")
	mustRestore(t, s, ws, c.ID)
	for _, x := range []struct{ path, name, want string }{
		{"a.txt", "user.kept", "1"}, {"a.txt", "user.added", ""}, {"sub", "user.folder", "f"}, {"sub/b.txt", "user.gone", "g"},
	} {
		v := make([]byte, 64)
		n, err := unix.Getxattr(filepath.Join(ws, x.path), x.name, v)
		if got := string(v[:max(n, 0)]); err != nil && x.want != "" || got != x.want {
			t.Errorf("%s %s = %q (%v), want %q", x.path, x.name, got, err, x.want)
		}
	}
}
