package checkpoint

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/agentd/agentd/internal/testutil"
)

// listing describes the tree under dir in one line per entry, in path order: path,
// type, mode, owner, and for a file its content hash, mtime and the first name it shares an
// inode with; for a symlink its target. It reads through os and path/filepath, not this
// package, so a restore is checked against an independent view. Two equal listings
// are the same tree, byte for byte. Run as a user other than root, it opens what the
// owner locked (chmod 000) for the moment it reads it (opened).
func listing(t testing.TB, dir string) string {
	t.Helper()
	var b strings.Builder
	first := map[uint64]string{}
	var walk func(rel string) error
	walk = func(rel string) error {
		p := filepath.Join(dir, rel)
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		st := fi.Sys().(*syscall.Stat_t)
		if rel != "." {
			fmt.Fprintf(&b, "%q %s %04o %d:%d", rel, kindOf(st.Mode), st.Mode&0o7777, st.Uid, st.Gid)
		}
		switch kindOf(st.Mode) {
		case kindDir:
			if rel != "." {
				b.WriteByte('\n')
			}
			return opened(p, st, func() error {
				entries, err := os.ReadDir(p)
				for _, d := range entries {
					if err == nil {
						err = walk(filepath.Join(rel, d.Name()))
					}
				}
				return err
			})
		case kindFile:
			var sum []byte
			if err := opened(p, st, func() error {
				f, err := os.Open(p)
				if err != nil {
					return err
				}
				defer f.Close()
				h := sha256.New()
				_, err = io.Copy(h, f)
				sum = h.Sum(nil)
				return err
			}); err != nil {
				return err
			}
			fmt.Fprintf(&b, " %x mtime=%d", sum[:8], st.Mtim.Nano())
			if st.Nlink > 1 {
				if f, ok := first[st.Ino]; ok {
					fmt.Fprintf(&b, " link=%q", f)
				} else {
					first[st.Ino] = rel
				}
			}
		case kindSymlink:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			fmt.Fprintf(&b, " -> %q", target)
		}
		b.WriteByte('\n')
		return nil
	}
	if err := walk("."); err != nil {
		t.Fatalf("listing %s: %v", dir, err)
	}
	return b.String()
}

// opened runs fn with p (stat st) given its owner read, and search for a folder, for the
// moment, when the test is not root (root needs none) and p's mode lacks them; then
// p gets its mode back. Its mtime does not move.
func opened(p string, st *syscall.Stat_t, fn func() error) error {
	need := uint32(0o400)
	if kindOf(st.Mode) == kindDir {
		need = 0o500
	}
	mode := st.Mode & 0o7777
	if os.Geteuid() == 0 || mode&need == need {
		return fn()
	}
	if err := syscall.Chmod(p, mode|need); err != nil {
		return err
	}
	defer syscall.Chmod(p, mode)
	return fn()
}

// lockableTempDir is t.TempDir for a workspace whose folders a test may lock (chmod
// 000): run as a user other than root, the testing package could not remove it, so
// RemoveTree, which lends itself access as the daemon does, removes it first.
func lockableTempDir(t testing.TB) string {
	t.Helper()
	d := t.TempDir()
	t.Cleanup(func() {
		if err := RemoveTree(filepath.Dir(d), filepath.Base(d)); err != nil {
			t.Errorf("removing the workspace: %v", err)
		}
	})
	return d
}

// sameListing fails the test, showing the lines that differ, unless got equals want.
func sameListing(t testing.TB, what, got, want string) {
	t.Helper()
	if got == want {
		return
	}
	gl, wl := lineSet(got), lineSet(want)
	var diff strings.Builder
	for _, l := range strings.Split(want, "\n") {
		if !gl[l] {
			diff.WriteString("- " + l + "\n")
		}
	}
	for _, l := range strings.Split(got, "\n") {
		if !wl[l] {
			diff.WriteString("+ " + l + "\n")
		}
	}
	t.Fatalf("%s: the workspace differs from what it was (- expected, + found):\n%s", what, diff.String())
}

func lineSet(s string) map[string]bool {
	m := map[string]bool{}
	for _, l := range strings.Split(s, "\n") {
		m[l] = true
	}
	return m
}

// openStore opens a store in a new folder, closed when the test ends.
func openStore(t testing.TB, opt Options) *Store {
	t.Helper()
	s := mustOpen(t, t.TempDir(), opt)
	t.Cleanup(func() { s.Close() })
	return s
}

// mustOpen opens the store at dir; closing it is the caller's.
func mustOpen(t testing.TB, dir string, opt Options) *Store {
	t.Helper()
	s, err := Open(dir, opt)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// storeWithFiles opens a store with the default options beside a new workspace holding files.
func storeWithFiles(t testing.TB, files map[string]string) (*Store, string) {
	t.Helper()
	ws := t.TempDir()
	writeFiles(t, ws, files)
	return openStore(t, Options{}), ws
}

// mustCheckpoint takes a checkpoint that must be whole.
func mustCheckpoint(t testing.TB, s *Store, ws string) Info {
	t.Helper()
	c, err := s.Checkpoint(context.Background(), ws)
	if err != nil {
		t.Fatal(err)
	}
	if c.Partial {
		t.Fatalf("checkpoint %d is partial: %s", c.ID, c.Problem())
	}
	return c
}

// mustRestore restores checkpoint id into ws; the restore must succeed.
func mustRestore(t testing.TB, s *Store, ws string, id ID) {
	t.Helper()
	if _, err := s.Restore(ctx, ws, id); err != nil {
		t.Fatal(err)
	}
}

// settled checkpoints ws until no file in the checkpoint is within the racy window,
// so the next checkpoint reads only what changes, and returns that checkpoint.
func settled(t testing.TB, s *Store, ws string) Info {
	t.Helper()
	return walkedUntil(t, s, ws, "a checkpoint whose files all changed before the racy window", func(c Info) bool {
		if c.Partial {
			t.Fatalf("checkpoint %d is partial: %s", c.ID, c.Problem())
		}
		return !hasRacy(t, s, c.root)
	})
}

// walkedUntil checkpoints ws until done holds for the checkpoint taken, and returns
// it; what names the wait. Each try walks the workspace: with no event since, the
// watcher would return the same checkpoint.
func walkedUntil(t testing.TB, s *Store, ws, what string, done func(Info) bool) Info {
	t.Helper()
	var c Info
	testutil.Eventually(t, 30e9, what, func() bool {
		s.mu.Lock()
		s.watch.armed = false
		s.mu.Unlock()
		var err error
		if c, err = s.Checkpoint(ctx, ws); err != nil {
			t.Fatal(err)
		}
		return done(c)
	})
	return c
}

func hasRacy(t testing.TB, s *Store, root hash) bool {
	tr, err := s.readTree(root)
	if err != nil {
		t.Fatal(err)
	}
	return treeHas(t, s, tr, func(e *entry) bool { return e.flags&flagRacy != 0 })
}

// treeHas reports whether has holds for an entry of tr or of a captured folder in it.
func treeHas(t testing.TB, s *Store, tr tree, has func(e *entry) bool) bool {
	for i := range tr {
		e := &tr[i]
		if has(e) {
			return true
		}
		if e.kind == kindDir && e.captured() {
			sub, err := s.subtree(e)
			if err != nil {
				t.Fatal(err)
			}
			if treeHas(t, s, sub, has) {
				return true
			}
		}
	}
	return false
}

// writeFiles writes files (path → content) under dir, making folders as needed.
func writeFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for p, content := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// verifyStore checks that every object a kept checkpoint reaches is in the store with
// the content its name says.
func verifyStore(t testing.TB, s *Store) {
	t.Helper()
	err := s.begin(context.Background())
	defer s.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[hash]bool{}
	for _, id := range s.ids {
		c, err := s.readRecord(id)
		if err != nil {
			t.Fatal(err)
		}
		err = s.reach(c.root, seen, func(h hash, size int64) error {
			b, err := readAt(s.objects, h.String())
			if err != nil {
				return err
			}
			if sha256.Sum256(b) != h || int64(len(b)) != size {
				return fmt.Errorf("object %s is damaged", h)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("checkpoint %d: %v", id, err)
		}
	}
}
