package checkpoint

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"unicode/utf8"

	"github.com/agentd/agentd/internal/testutil"
	"golang.org/x/sys/unix"
)

func TestRestoreReplacesASymlinkPlantedWhereAFolderWas(t *testing.T) {
	ws, outside := t.TempDir(), t.TempDir()
	writeFiles(t, outside, map[string]string{"keep": "outside"})
	wantOutside := listing(t, outside)
	s := openStore(t, Options{})
	writeFiles(t, ws, map[string]string{"sub/a": "inside", "sub/deeper/b": "b"})
	c := mustCheckpoint(t, s, ws)
	want := listing(t, ws)
	os.RemoveAll(filepath.Join(ws, "sub"))
	os.Symlink(outside, filepath.Join(ws, "sub"))
	mustRestore(t, s, ws, c.ID)
	sameListing(t, "the workspace", listing(t, ws), want)
	sameListing(t, "the folder the link pointed to", listing(t, outside), wantOutside)
}

// A link swapped in for a folder while the restore works in it must not redirect a
// single write: the restore holds the folder open, and opens nothing through a link.
func TestRestoreNeverWritesThroughASymlinkSwappedInMidway(t *testing.T) {
	tests := []struct {
		name string
		when string // the path whose appearance triggers the swap
	}{
		{"when_the_folder_is_made", "sub"},
		{"after_its_first_file_is_back", "sub/a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws, outside := t.TempDir(), t.TempDir()
			writeFiles(t, outside, map[string]string{"keep": "outside"})
			wantOutside := listing(t, outside)
			s := openStore(t, Options{})
			writeFiles(t, ws, map[string]string{"sub/a": "a", "sub/b": "b", "sub/c/d": "d"})
			c := mustCheckpoint(t, s, ws)
			want := listing(t, ws)
			os.RemoveAll(filepath.Join(ws, "sub"))
			swapped := false
			testHookStep = func() {
				_, journal := os.Lstat(filepath.Join(s.dir, journalName))
				if _, err := os.Lstat(filepath.Join(ws, tt.when)); swapped || journal != nil || err != nil {
					return
				}
				swapped = true
				os.Rename(filepath.Join(ws, "sub"), filepath.Join(ws, "moved"))
				os.Symlink(outside, filepath.Join(ws, "sub"))
			}
			t.Cleanup(func() { testHookStep = nil })
			s.Restore(ctx, ws, c.ID) // may fail: the tree changed under it
			testHookStep = nil
			if !swapped {
				t.Fatal("the swap never happened")
			}
			sameListing(t, "the folder the link pointed to", listing(t, outside), wantOutside)
			mustRestore(t, s, ws, c.ID)
			sameListing(t, "the workspace restored again", listing(t, ws), want)
		})
	}
}

func TestCheckpointRecordsAFifoWithoutOpeningIt(t *testing.T) {
	ws := t.TempDir()
	s := openStore(t, Options{})
	if err := syscall.Mkfifo(filepath.Join(ws, "pipe"), 0o640); err != nil {
		t.Fatal(err)
	}
	writeFiles(t, ws, map[string]string{"a": "x"})
	want := listing(t, ws)
	c := mustCheckpoint(t, s, ws) // opening the fifo would block here
	if len(c.Notices) != 1 || c.Notices[0].Path != "pipe" || c.Notices[0].Lost || !strings.Contains(c.Notices[0].Problem, "fifo") {
		t.Fatalf("notices %+v; want the fifo named, recorded without content", c.Notices)
	}
	os.Remove(filepath.Join(ws, "pipe"))
	mustRestore(t, s, ws, c.ID)
	sameListing(t, "after restore", listing(t, ws), want)
}

// A step that replaced a socket or a device keeps nothing of what it put there through
// a restore: the socket is made again (nothing listens on it, as when its program ended),
// and what replaced a device, whose number is not recorded, is removed.
func TestRestoreEndsASocketsOrDevicesPathAsItsKindOrNothing(t *testing.T) {
	testutil.AsRootAndNot(t, func(t *testing.T) {
		ws := lockableTempDir(t)
		s := openStore(t, Options{})
		if err := unix.Mknod(filepath.Join(ws, "s"), unix.S_IFSOCK|0o640, 0); err != nil {
			t.Fatal(err)
		}
		if err := unix.Mknod(filepath.Join(ws, "w"), unix.S_IFCHR|0o600, 0); err != nil { // a whiteout: anyone may make one
			t.Fatal(err)
		}
		writeFiles(t, ws, map[string]string{"a": "x"})
		want := listing(t, ws)
		c := mustCheckpoint(t, s, ws)

		for _, n := range []string{"s", "w"} {
			if err := os.Remove(filepath.Join(ws, n)); err != nil {
				t.Fatal(err)
			}
		}
		writeFiles(t, ws, map[string]string{"s": "planted by the step", "w/d/payload": "planted too"})
		r, err := s.Restore(ctx, ws, c.ID)
		if err != nil {
			t.Fatal(err)
		}
		sameListing(t, "after the restore", listing(t, ws), strings.Join(slices.DeleteFunc(strings.Split(want, "\n"), func(l string) bool { return strings.HasPrefix(l, `"w" `) }), "\n"))
		if !slices.ContainsFunc(r.Notices, func(n Notice) bool { return n.Path == "w" && strings.Contains(n.Problem, "removed") }) {
			t.Errorf("notices %+v; want the device's path named as removed", r.Notices)
		}

		// A device still there is kept.
		if err := unix.Mknod(filepath.Join(ws, "w"), unix.S_IFCHR|0o600, 0); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Restore(ctx, ws, c.ID); err != nil {
			t.Fatal(err)
		}
		sameListing(t, "after a restore over the device", listing(t, ws), want)
	})
}

func TestCheckpointOfA2GBSparseFileOverBudgetNamesIt(t *testing.T) {
	s, ws := storeWithFiles(t, map[string]string{"a": "small"})
	c0 := mustCheckpoint(t, s, ws)
	f, err := os.Create(filepath.Join(ws, "big.img"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(2 << 30); err != nil {
		t.Fatal(err)
	}
	f.Close()
	c, err := s.Checkpoint(ctx, ws)
	if err != nil {
		t.Fatal(err)
	}
	if !c.Partial || c.NewBytes > 4096 {
		t.Fatalf("checkpoint: partial %v, %d new bytes; want partial, the big file not stored", c.Partial, c.NewBytes)
	}
	if p := c.Problem(); !strings.Contains(p, "big.img is 2147483648 bytes, over the limit of 67108864 bytes per file") {
		t.Fatalf("Problem() = %q; want the file, its size and the limit named", p)
	}
	// Rewinding past it removes it, and the person can be told the rewind cannot be undone.
	r, err := s.Restore(ctx, ws, c0.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(ws, "big.img")); !os.IsNotExist(err) {
		t.Fatalf("big.img after rewinding to before it: %v", err)
	}
	if !r.Before.Partial || !strings.Contains(r.Before.Problem(), "big.img") {
		t.Fatalf("the checkpoint before the rewind: partial %v, %q; want big.img named as not captured", r.Before.Partial, r.Before.Problem())
	}
}

func TestTwentyThousandDeepTreeIsCapturedAndRestored(t *testing.T) {
	depth := 20_000
	if testing.Short() {
		depth = 2_000 // making and removing 20,000 folders takes the kernel 15 s on a loaded disk
	}
	ws := t.TempDir()
	s := openStore(t, Options{})
	t.Cleanup(func() { removeDeep(t, ws) })
	atDepth(t, ws, depth, func(fd int) { writeAt(t, fd, "leaf", "bottom") })
	atDepth(t, ws, depth/2, func(fd int) { writeAt(t, fd, "mid", "middle") })
	fds := openFDs(t)
	c := mustCheckpoint(t, s, ws)
	if c.Files != 2 {
		t.Fatalf("checkpoint counts %d files, want 2", c.Files)
	}
	atDepth(t, ws, depth, func(fd int) { writeAt(t, fd, "leaf", "changed") })
	atDepth(t, ws, depth/2, func(fd int) { unix.Unlinkat(fd, "mid", 0) })
	r, err := s.Restore(ctx, ws, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	if r.Diff.Files != 2 || r.Diff.Folders != 0 {
		t.Fatalf("restore changed %s; want the leaf and mid", r.Diff.Summary())
	}
	atDepth(t, ws, depth, func(fd int) { readBack(t, fd, "leaf", "bottom") })
	atDepth(t, ws, depth/2, func(fd int) { readBack(t, fd, "mid", "middle") })
	if now := openFDs(t); now != fds {
		t.Fatalf("%d descriptors open after, %d before", now, fds)
	}
}

// atDepth calls f with the folder depth levels down the chain ws/d/d/…, making it as
// needed. It holds one descriptor at a time: a path that long is past PATH_MAX.
func atDepth(t *testing.T, ws string, depth int, f func(fd int)) {
	fd, err := unix.Open(ws, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	for range depth {
		unix.Mkdirat(fd, "d", 0o755)
		next, err := unix.Openat(fd, "d", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
		unix.Close(fd)
		if err != nil {
			t.Fatal(err)
		}
		fd = next
	}
	defer unix.Close(fd)
	f(fd)
}

func writeAt(t *testing.T, dir int, name, content string) {
	fd, err := unix.Openat(dir, name, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	unix.Write(fd, []byte(content))
	unix.Close(fd)
}

func readBack(t *testing.T, dir int, name, want string) {
	t.Helper()
	b, err := readAt(dir, name)
	if err != nil || string(b) != want {
		t.Fatalf("%s at the bottom of the deep tree: %q, %v; want %q", name, b, err, want)
	}
}

// removeDeep removes the deep tree with the package's own remover: os.RemoveAll holds
// a descriptor per level.
func removeDeep(t *testing.T, ws string) {
	ds, err := openRoot(ws, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ds.close()
	if err := removeAt(ds, "d", make([]byte, 8<<10)); err != nil {
		t.Fatal(err)
	}
}

func openFDs(t *testing.T) int {
	names, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(names)
}

func TestNamesWithNewlinesAndInvalidUTF8AreKeptAndShownEscaped(t *testing.T) {
	ws := t.TempDir()
	s := openStore(t, Options{})
	names := []string{"new\nline", "\xff\xfe", "esc\x1b[31mred", "rtl\u202etxt.exe"}
	for _, n := range names {
		writeFiles(t, ws, map[string]string{n: "v1\n"})
	}
	c1 := mustCheckpoint(t, s, ws)
	want := listing(t, ws)
	for _, n := range names {
		writeFiles(t, ws, map[string]string{n: "v2\n"})
	}
	c2 := mustCheckpoint(t, s, ws)
	d, err := s.Diff(ctx, c1.ID, c2.ID)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, c := range d.Changes {
		got[c.Path] = true
	}
	for _, n := range names {
		if !got[n] {
			t.Fatalf("diff changes %+v lack %q exactly", d.Changes, n)
		}
	}
	text := d.Text()
	if !utf8.ValidString(text) || strings.ContainsAny(text, "\x1b\u202e") {
		t.Fatalf("the diff shows raw control, bidi or invalid bytes:\n%s", text)
	}
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, "line") {
			t.Fatalf("a name's newline started a line of its own:\n%s", text)
		}
	}
	mustRestore(t, s, ws, c1.ID)
	sameListing(t, "after restore", listing(t, ws), want)
}

// A file whose other name is outside the workspace is captured as a copy: a restore
// makes a file of its own, and never writes to the other name.
func TestHardLinkToAFileOutsideIsKeptAsACopy(t *testing.T) {
	ws, outside := t.TempDir(), t.TempDir()
	writeFiles(t, outside, map[string]string{"f": "shared"})
	if err := os.Link(filepath.Join(outside, "f"), filepath.Join(ws, "f")); err != nil {
		t.Fatal(err)
	}
	s := openStore(t, Options{})
	c := mustCheckpoint(t, s, ws)
	os.Remove(filepath.Join(ws, "f"))
	mustRestore(t, s, ws, c.ID)
	writeFiles(t, ws, map[string]string{"f": "written in the workspace"})
	if b, _ := os.ReadFile(filepath.Join(outside, "f")); string(b) != "shared" {
		t.Fatalf("the outside name reads %q: the restored file is linked to it", b)
	}
}

// A file already right is kept (same inode), and a changed mtime is put back.
func TestRestoreKeepsAFileAlreadyRightAndPutsBackItsTime(t *testing.T) {
	s, ws := storeWithFiles(t, map[string]string{"a": "same"})
	c := settled(t, s, ws)
	want := listing(t, ws)
	p := filepath.Join(ws, "a")
	os.Chtimes(p, c.Time, c.Time.Add(-3600e9))
	settled(t, s, ws)
	var before syscall.Stat_t
	syscall.Lstat(p, &before)
	mustRestore(t, s, ws, c.ID)
	var after syscall.Stat_t
	syscall.Lstat(p, &after)
	if after.Ino != before.Ino {
		t.Fatal("a file whose content was right was written again")
	}
	sameListing(t, "after restore", listing(t, ws), want)
}
