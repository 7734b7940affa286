package checkpoint

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/agentd/agentd/internal/testutil"
)

// lockedModes are the modes an agent may give what it owns that shut out its owner:
// no access, write only, no write, read without search.
var lockedModes = map[string]uint32{"none": 0o000, "write-only": 0o200, "no-write": 0o500, "no-search": 0o400}

// lockWorkspace fills ws with a folder per locked mode (each holding a file and a
// folder) and a file per mode, then locks them, deepest first, and the root last.
func lockWorkspace(t *testing.T, ws string, root uint32) {
	t.Helper()
	for name := range lockedModes {
		writeFiles(t, ws, map[string]string{"d-" + name + "/inner.txt": "inside " + name + "\n", "d-" + name + "/sub/deep.txt": "deep\n", "f-" + name: name + "\n"})
	}
	for name, m := range lockedModes {
		for _, p := range []string{"d-" + name + "/sub", "d-" + name, "f-" + name} {
			if err := unix.Chmod(filepath.Join(ws, p), m); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := unix.Chmod(ws, root); err != nil {
		t.Fatal(err)
	}
}

// A daemon that is not root captures, restores and removes folders and files whose
// owner (the daemon) locked them by their mode: it lends itself access for the moment,
// the checkpoint records the mode the agent set, and every mode is put back.
func TestLockedFoldersAndFilesAreCapturedRestoredAndRemovedAsTheirOwner(t *testing.T) {
	if testutil.AsUnprivileged(t) {
		return
	}
	for _, root := range []uint32{0o755, 0o000, 0o500} {
		ws := lockableTempDir(t)
		s := openStore(t, Options{})
		lockWorkspace(t, ws, root)
		want := listing(t, ws)
		c := mustCheckpoint(t, s, ws)
		if c.Partial || len(c.Notices) != 0 {
			t.Fatalf("root %04o: checkpoint of a locked workspace left things out: %+v", root, c.Notices)
		}
		sameListing(t, "after the checkpoint (every mode put back)", listing(t, ws), want)

		unix.Chmod(ws, 0o755)
		for name := range lockedModes { // an agent's next step: it unlocks, rewrites and deletes
			d := filepath.Join(ws, "d-"+name)
			unix.Chmod(d, 0o755)
			unix.Chmod(filepath.Join(d, "sub"), 0o755)
			os.RemoveAll(filepath.Join(d, "sub"))
			os.Remove(filepath.Join(ws, "f-"+name))
			os.WriteFile(filepath.Join(d, "inner.txt"), []byte("rewritten\n"), 0o644)
		}
		lockWorkspace(t, ws, root) // locked again, with the new content in place
		if _, err := s.Restore(ctx, ws, c.ID); err != nil {
			t.Fatalf("root %04o: restore: %v", root, err)
		}
		sameListing(t, "after the restore", listing(t, ws), want)

		if err := RemoveTree(filepath.Dir(ws), filepath.Base(ws)); err != nil {
			t.Fatalf("root %04o: removing the locked workspace: %v", root, err)
		}
		if _, err := os.Lstat(ws); !os.IsNotExist(err) {
			t.Fatalf("root %04o: the workspace is still there after RemoveTree: %v", root, err)
		}
	}
}

// What the daemon does not own keeps its mode: lending access to it is refused, so
// a capture names it as not captured instead of changing another user's files.
func TestLendingAccessIsRefusedForWhatTheDaemonDoesNotOwn(t *testing.T) {
	if testutil.AsUnprivileged(t) {
		return
	}
	if os.Geteuid() == 0 {
		t.Skip("root owns the folder this test needs someone else to own, and cannot re-run itself as another user here")
	}
	dir, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(dir)
	var before, after unix.Stat_t
	if err := unix.Stat("/root", &before); err != nil || before.Mode&0o005 == 0o005 {
		t.Skipf("no folder here that another user owns and others may not read (/root: %v, mode %o)", err, before.Mode)
	}
	if _, _, err := lend(dir, "root", 0o500, nil); err != unix.EACCES {
		t.Errorf("lending access to /root: %v, want %v", err, unix.EACCES)
	}
	if _, _, err := openDir(&dirStack{}, dir, "root", unix.O_NOFOLLOW|unix.O_CLOEXEC); err == nil || !strings.Contains(err.Error(), "permission denied") {
		t.Errorf("opening /root: %v, want permission denied", err)
	}
	unix.Stat("/root", &after)
	if after.Mode != before.Mode {
		t.Errorf("/root's mode went from %o to %o", before.Mode, after.Mode)
	}
}

// A chain of locked folders deeper than the open-descriptor window is captured and
// restored with no more descriptors than an unlocked one (the test lowers the limit
// below the chain's depth): a folder lent access past the window is closed too,
// reopened from its child's "..", and still gets its mode back.
func TestLockedFoldersPastTheOpenWindowHoldNoDescriptor(t *testing.T) {
	if testutil.AsUnprivileged(t) {
		return
	}
	ws := lockableTempDir(t)
	s := openStore(t, Options{})
	var dirs []string
	for p, i := ws, 0; i < 6*openWindow; i++ {
		p = filepath.Join(p, "d")
		dirs = append(dirs, p)
	}
	leaf := filepath.Join(dirs[len(dirs)-1], "leaf.txt")
	writeFiles(t, ws, map[string]string{strings.TrimPrefix(leaf, ws+"/"): "before\n"})
	lock := func(mode uint32) {
		for i := range dirs {
			if mode == 0 {
				i = len(dirs) - 1 - i // deepest first, while its parents can still be searched
			}
			if err := unix.Chmod(dirs[i], mode); err != nil {
				t.Fatal(err)
			}
		}
	}
	stillLocked := func(what string) {
		t.Helper()
		for i, d := range dirs {
			var st unix.Stat_t
			if err := unix.Stat(d, &st); err != nil || st.Mode&0o7777 != 0 {
				t.Fatalf("%s: folder %d of the chain has mode %o (%v), want 000 put back", what, i+1, st.Mode&0o7777, err)
			}
			unix.Chmod(d, 0o700)
		}
		lock(0)
	}
	lock(0)
	var was unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &was); err != nil {
		t.Fatal(err)
	}
	low := was
	low.Cur = uint64(len(dirs)) - openWindow
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &low); err != nil {
		t.Fatal(err)
	}
	defer unix.Setrlimit(unix.RLIMIT_NOFILE, &was)

	c := mustCheckpoint(t, s, ws)
	if c.Partial || len(c.Notices) != 0 {
		t.Fatalf("checkpoint of a locked chain %d folders deep left things out: %+v", len(dirs), c.Notices)
	}
	stillLocked("after the checkpoint")
	lock(0o700)
	if err := os.WriteFile(leaf, []byte("after\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	lock(0)
	if _, err := s.Restore(ctx, ws, c.ID); err != nil {
		t.Fatalf("restore of a locked chain %d folders deep: %v", len(dirs), err)
	}
	stillLocked("after the restore")
	lock(0o700)
	if b, err := os.ReadFile(leaf); err != nil || string(b) != "before\n" {
		t.Errorf("the leaf after the restore: %q, %v; want %q", b, err, "before\n")
	}
}

// A restore puts back the extended attributes of a file its owner (the daemon) locked
// (mode 000), lending itself access for the moment, and the file keeps its mode.
func TestRestorePutsBackTheExtendedAttributesOfALockedFile(t *testing.T) {
	if testutil.AsUnprivileged(t) {
		return
	}
	ws := lockableTempDir(t)
	s := openStore(t, Options{})
	writeFiles(t, ws, map[string]string{"a.txt": "one\n"})
	p := filepath.Join(ws, "a.txt")
	if err := unix.Setxattr(p, "user.kept", []byte("1"), 0); err != nil {
		t.Skipf("no user extended attributes here: %v", err)
	}
	unix.Chmod(p, 0o000)
	c := mustCheckpoint(t, s, ws)
	unix.Chmod(p, 0o600)
	unix.Setxattr(p, "user.kept", []byte("changed"), 0)
	unix.Chmod(p, 0o000)
	r, err := s.Restore(ctx, ws, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Stat(p, &st); err != nil || st.Mode&0o7777 != 0 {
		t.Errorf("a.txt after the restore: mode %o (%v), want 000 kept", st.Mode&0o7777, err)
	}
	unix.Chmod(p, 0o600)
	v := make([]byte, 64)
	n, err := unix.Getxattr(p, "user.kept", v)
	if got := string(v[:max(n, 0)]); err != nil || got != "1" {
		t.Errorf("user.kept of the locked a.txt after the restore = %q (%v), want %q put back; notices %+v", got, err, "1", r.Notices)
	}
}

// A hard link whose first name is in a folder its owner locked (000) is captured and
// restored as a link of it: a restore reaches the first name through the locked folder
// the way it reached it to restore it.
func TestHardLinksIntoALockedFolderAreRestored(t *testing.T) {
	if testutil.AsUnprivileged(t) {
		return
	}
	ws := lockableTempDir(t)
	s := openStore(t, Options{})
	writeFiles(t, ws, map[string]string{"a-locked/deeper/first": "shared\n", "z/keep": "k\n"})
	if err := os.Link(filepath.Join(ws, "a-locked/deeper/first"), filepath.Join(ws, "z/second")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"a-locked/deeper", "a-locked"} {
		unix.Chmod(filepath.Join(ws, p), 0o000)
	}
	want := listing(t, ws)
	c := mustCheckpoint(t, s, ws)
	if c.Partial || len(c.Notices) != 0 {
		t.Fatalf("checkpoint left things out: %+v", c.Notices)
	}
	for _, p := range []string{"a-locked", "a-locked/deeper"} {
		unix.Chmod(filepath.Join(ws, p), 0o755)
	}
	os.Remove(filepath.Join(ws, "z/second"))
	os.Remove(filepath.Join(ws, "a-locked/deeper/first"))
	writeFiles(t, ws, map[string]string{"a-locked/deeper/first": "rewritten\n", "z/second": "apart\n"})
	for _, p := range []string{"a-locked/deeper", "a-locked"} {
		unix.Chmod(filepath.Join(ws, p), 0o000)
	}
	r, err := s.Restore(ctx, ws, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Notices) != 0 {
		t.Errorf("the restore left things as they were: %+v", r.Notices)
	}
	sameListing(t, "after the restore", listing(t, ws), want)
}

// A walk that fails to give back a mode it lent leaves its note (lent) and the mode: the
// store's next walk gives the mode back before it reads the workspace, whether or not it lends
// anything itself, and the note goes only once every mode it names is back.
func TestModeAFailedWalkLeftLentIsGivenBackBeforeItsNoteGoes(t *testing.T) {
	if testutil.AsUnprivileged(t) {
		return
	}
	for _, lends := range []bool{false, true} {
		ws := lockableTempDir(t)
		s := openStore(t, Options{})
		writeFiles(t, ws, map[string]string{"lib/helper.py": "x\n", "f": "f\n"})
		lib := filepath.Join(ws, "lib")
		if err := unix.Chmod(lib, 0o311); err != nil {
			t.Fatal(err)
		}
		if lends { // the next walk lends the file f read, and notes it
			unix.Chmod(filepath.Join(ws, "f"), 0o000)
		}
		// What a walk that lent lib read and search, then failed to give them back, leaves.
		var st unix.Stat_t
		if err := unix.Stat(lib, &st); err != nil {
			t.Fatal(err)
		}
		l := newLendLog(s, ws)
		if err := l.note("lib", st.Dev, st.Ino, 0o311, 0o711); err != nil {
			t.Fatal(err)
		}
		unix.Chmod(lib, 0o711)
		l.done(false)

		c := mustCheckpoint(t, s, ws)
		if err := unix.Stat(lib, &st); err != nil || st.Mode&0o7777 != 0o311 {
			t.Errorf("lends %v: lib after the next walk has mode %04o (%v), want 0311 given back", lends, st.Mode&0o7777, err)
		}
		if _, err := os.Lstat(filepath.Join(s.dir, lentName)); !os.IsNotExist(err) {
			t.Errorf("lends %v: the note of lent modes after the next walk: %v, want it gone once every mode is back", lends, err)
		}
		if tr, err := s.readTree(c.root); err != nil {
			t.Fatal(err)
		} else if e := tr.find("lib"); e == nil || e.mode != 0o311 {
			t.Errorf("lends %v: the next walk's checkpoint does not record lib with mode 0311", lends)
		}
	}
}
