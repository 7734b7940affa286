package commands

import (
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentd/agentd/internal/testutil"
)

// writeDeep makes depth nested folders named d under ws by relative mkdirat/openat (as
// `mkdir d; cd d` in a shell loop does, past PATH_MAX) and writes size bytes of real
// blocks in the deepest one.
func writeDeep(t *testing.T, ws string, depth, size int) {
	t.Helper()
	fd, err := unix.Open(ws, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	for range depth {
		if err := unix.Mkdirat(fd, "d", 0o700); err != nil {
			t.Fatal(err)
		}
		next, err := unix.Openat(fd, "d", unix.O_RDONLY|unix.O_DIRECTORY, 0)
		if err != nil {
			t.Fatal(err)
		}
		unix.Close(fd)
		fd = next
	}
	defer unix.Close(fd)
	f, err := unix.Openat(fd, "big", unix.O_CREAT|unix.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(f)
	if _, err := unix.Write(f, make([]byte, size)); err != nil {
		t.Fatal(err)
	}
}

// watchUntilCut runs WatchDisk on ws with limit while write writes, and returns what cut
// was called with; the watch looks every millisecond, so its tenth look comes soon
// whatever the file system's growth says.
func watchUntilCut(t *testing.T, ws string, limit int64, write func()) (int64, error) {
	t.Helper()
	type cutWith struct {
		n   int64
		err error
	}
	cut := make(chan cutWith, 1)
	stop := WatchDisk(ws, limit, DiskFloor, time.Millisecond, func() (int64, error) { return DiskUsage(ws) }, parking,
		func(n int64, err error) { cut <- cutWith{n, err} })
	defer stop()
	write()
	select {
	case c := <-cut:
		return c.n, c.err
	case <-time.After(60 * time.Second):
		t.Fatalf("WatchDisk with a %d-byte limit never cut a workspace it cannot measure", limit)
	}
	return 0, nil
}

// A run can nest folders deeper than the walk descends (a shell loop of `mkdir d && cd
// d` reaches any depth): what lies there cannot be counted, so the walk fails, naming the
// fix, rather than report the workspace without it; and the watch cuts the writer rather
// than take the file system's growth for someone else's.
func TestDiskUsageFailsOnFoldersNestedDeeperThanItWalks(t *testing.T) {
	ws := testutil.ResolvedTempDir(t)
	t.Cleanup(func() { os.RemoveAll(ws) })
	writeDeep(t, ws, maxUsageDepth-1, 1<<20)
	if n, err := DiskUsage(ws); err != nil || n < 1<<20 {
		t.Fatalf("DiskUsage of folders %d deep = %d, %v; want the 1 MiB in the deepest counted", maxUsageDepth-1, n, err)
	}
	deep := filepath.Join(ws, "deeper")
	os.Mkdir(deep, 0o700)
	n, err := watchUntilCut(t, ws, 1<<40, func() { writeDeep(t, deep, maxUsageDepth+1, 1<<20) })
	if err == nil {
		t.Fatalf("the watch cut with %d bytes and no error; want the walk's failure", n)
	}
	if msg := err.Error(); !strings.Contains(msg, "nested deeper than 2048") || !strings.Contains(msg, "rm -rf deeper") {
		t.Errorf("error %q; want it to name the nesting and the fix (rm -rf deeper)", msg)
	}
}

// A daemon that is not root walks as the uid its sandboxes write as, which may keep its
// own folders from being listed (0300) or looked into (0600) while it writes in them:
// the walk fails on such a folder, naming it and the fix, rather than count it as one
// entry, and the watch cuts a writer that made its whole workspace so.
func TestDiskUsageFailsOnAFolderItCannotRead(t *testing.T) {
	if testutil.AsUnprivileged(t) {
		return
	}
	if os.Geteuid() == 0 {
		t.Skip("root reads every folder: run through testutil.AsUnprivileged")
	}
	for _, mode := range []os.FileMode{0o300, 0o600} {
		ws := testutil.ResolvedTempDir(t)
		dir := filepath.Join(ws, "x", "y")
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "big"), make([]byte, 1<<20), 0o600); err != nil {
			t.Fatal(err)
		}
		os.Chmod(dir, mode)
		t.Cleanup(func() { os.Chmod(dir, 0o700) })
		n, err := DiskUsage(ws)
		if err == nil {
			t.Errorf("mode %o: DiskUsage = %d and no error, with 1 MiB in a folder it cannot read", mode, n)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, `"x/y"`) || !strings.Contains(msg, "chmod -R u+rwx x") {
			t.Errorf("mode %o: error %q; want it to name the folder x/y and the fix", mode, msg)
		}
	}

	ws := testutil.ResolvedTempDir(t)
	_, err := watchUntilCut(t, ws, 1<<40, func() {
		if err := os.Chmod(ws, 0o300); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ws, "big"), make([]byte, 1<<20), 0o600); err != nil {
			t.Fatal(err)
		}
	})
	os.Chmod(ws, 0o700)
	if err == nil || !strings.Contains(err.Error(), "chmod -R u+rwx .") {
		t.Errorf("the watch cut with %v; want the walk's failure on the workspace itself and its fix", err)
	}
}

// Whatever hides from the measure (a file deleted while its only descriptor waits in a
// socket's queue, which no /proc listing names), a running command cannot take its file
// system's free disk under the floor: the look that sees it there cuts, saying why, with
// the workspace well within its limit; a floor of 0 (a kernel quota bounds the writes)
// never cuts so.
func TestWatchDiskCutsWhenTheFileSystemFallsUnderItsFloor(t *testing.T) {
	ws := t.TempDir()
	_, free, ok := fsLook(ws)
	if !ok {
		t.Fatal("statfs of a temp dir failed")
	}
	cut := make(chan error, 1)
	stop := WatchDisk(ws, 1<<40, free+1<<30, time.Millisecond, func() (int64, error) { return 0, nil }, parking,
		func(n int64, err error) { cut <- err })
	select {
	case err := <-cut:
		if err == nil || !strings.Contains(err.Error(), "agentd keeps free while commands run") {
			t.Fatalf("cut with %v, want the floor named", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("a file system under the watch's floor was never cut")
	}
	stop()
	var measures atomic.Int32 // one every tenth look
	stop = WatchDisk(ws, 1<<40, 0, time.Millisecond, func() (int64, error) { measures.Add(1); return 0, nil }, parking,
		func(n int64, err error) { cut <- err })
	testutil.Eventually(t, time.Minute, "thirty looks of the watch", func() bool { return measures.Load() >= 3 })
	stop()
	select {
	case err := <-cut:
		t.Fatalf("a floor of 0 cut: %v", err)
	default:
	}
}

// A folder removed while the walk lists it (an `rm -rf` the watch's look lands in) holds
// nothing more: the walk counts it as removed, never as one it may not read.
func TestDiskUsageCountsAFolderRemovedWhileItIsWalkedAsRemoved(t *testing.T) {
	ws := t.TempDir()
	dir := filepath.Join(ws, "node_modules")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	u := &usage{seen: map[[2]uint64]bool{}}
	if u.folder(f, 1, "node_modules"); u.err != nil {
		t.Fatalf("a folder removed while it was walked failed the walk: %v", u.err)
	}
}

// Small files move the measure as much as the file system: statfs counts each one's
// block and inode, and so does DiskUsage, so that what a command adds or frees in small
// files is neither growth no measure explains nor room to hide as much.
func TestDiskUsageGrowsAsTheFileSystemDoesForSmallFiles(t *testing.T) {
	fs := ownFS(t, 1<<30)
	if os.Geteuid() != 0 {
		t.Skip("needs a file system of its own (a tmpfs, as root): others' writes blur statfs")
	}
	ws := filepath.Join(fs, "a")
	used0, _ := FSUsed(ws)
	n0, err := DiskUsage(ws)
	if err != nil {
		t.Fatal(err)
	}
	smallFiles(t, ws, 10, 100)
	used1, _ := FSUsed(ws)
	n1, err := DiskUsage(ws)
	if err != nil {
		t.Fatal(err)
	}
	if n1-n0 != used1-used0 {
		t.Fatalf("1,000 one-byte files in 10 folders grew the measure by %d bytes and the file system by %d", n1-n0, used1-used0)
	}
}
