package commands

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/testutil"
	"golang.org/x/sys/unix"
)

// parkInSocket allocates size bytes to a file it creates in dir and deletes, then keeps
// its only descriptor in the queue of a socket pair (SCM_RIGHTS), which no /proc
// listing names: what a hostile command does to hide disk from every measure. The bytes
// are freed when the test ends.
func parkInSocket(t *testing.T, dir string, size int64) {
	t.Helper()
	parkedInSocket(t, dir, size)
}

// parking is the evidence of a command whose programs park descriptors in a socket's
// queue (Programs.Parks): the tests here park from their own process, which no
// Programs holds.
func parking() bool { return true }

// parksNothing is the evidence of a command whose programs hold no socket where
// descriptors wait.
func parksNothing() bool { return false }

// A file deleted while its only descriptor waits in a socket's queue is in no listing,
// so no measure counts it; the file system's growth that nothing explains is charged to
// the running command all the same, and past its limit the watch cuts, saying so.
func TestWatchDiskCutsGrowthThatNoMeasureExplains(t *testing.T) {
	ws := t.TempDir()
	cut := make(chan error, 1)
	stop := WatchDisk(ws, 4<<20, 0, time.Millisecond, func() (int64, error) { return DiskUsage(ws) }, parking,
		func(n int64, err error) { cut <- err })
	defer stop()
	parkInSocket(t, ws, 128<<20)
	select {
	case err := <-cut:
		var ug *ErrUnexplainedGrowth
		if !errors.As(err, &ug) || ug.Grew < 64<<20 || ug.Limit != 4<<20 {
			t.Fatalf("cut with %v; want the 128 MiB no measure explains named, past the 4 MiB limit", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the watch never cut a command holding 128 MiB no listing shows, past its 4 MiB limit")
	}
}

// Two commands writing on one file system at once, each within its limit, are not cut
// for each other's writes: a watch that sees growth it cannot explain has the other
// watch measure first, and what that one's command wrote is explained.
func TestWatchDiskChargesNoCommandWithAnotherWatchsGrowth(t *testing.T) {
	small, big := t.TempDir(), t.TempDir()
	cut := make(chan error, 2)
	var looks atomic.Int32
	stopSmall := WatchDisk(small, 64<<20, 0, time.Millisecond, func() (int64, error) { looks.Add(1); return DiskUsage(small) }, parking,
		func(n int64, err error) { cut <- err })
	defer stopSmall()
	stopBig := WatchDisk(big, 1<<40, 0, time.Hour, func() (int64, error) { return DiskUsage(big) }, parking,
		func(n int64, err error) { cut <- err })
	defer stopBig()
	allocate(t, filepath.Join(small, "own"), 8<<20)
	allocate(t, filepath.Join(big, "own"), 256<<20) // the big watch never looks itself
	seen := looks.Load()
	testutil.Eventually(t, time.Minute, "twenty more looks of the small watch, or a cut", func() bool { return looks.Load() >= seen+20 || len(cut) > 0 })
	select {
	case err := <-cut:
		t.Fatalf("a command within its limit was cut for another's writes: %v", err)
	default:
	}
}

// What the daemon writes in a folder a running watch measures (a preview applied in a
// watched workspace) is explained by that watch's measure alone: explained twice too,
// it would be room for another command to hide as much. Written elsewhere on the file
// system, it is explained as the daemon says.
func TestExplainGrowthInAWatchedFolderIsLeftToItsMeasure(t *testing.T) {
	ws := t.TempDir()
	if err := os.Mkdir(filepath.Join(ws, "applied"), 0o755); err != nil {
		t.Fatal(err)
	}
	w := ledger.join(ws, func() (int64, error) { return 0, nil })
	defer ledger.leave(w)
	before := ledger.explained(w)
	ExplainGrowthIn(ws, 64<<20)
	ExplainGrowthIn(filepath.Join(ws, "applied"), 64<<20)
	if got := ledger.explained(w) - before; got != 0 {
		t.Fatalf("a write in the watched folder was explained by %d bytes beside the watch's measure; want 0", got)
	}
	ExplainGrowthIn(filepath.Dir(ws), 64<<20)
	if got := ledger.explained(w) - before; got != 64<<20 {
		t.Fatalf("a write outside every watched folder was explained by %d bytes; want %d", got, 64<<20)
	}
}

// allocate makes a file of size bytes of real blocks at name.
func allocate(t *testing.T, name string, size int64) {
	t.Helper()
	f, err := os.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := unix.Fallocate(int(f.Fd()), 0, 0, size); err != nil {
		t.Fatal(err)
	}
}

// What the ledger adds to a measure of the disk watch (two locks and a sum), and a
// refresh, which a watch does only when it sees growth it cannot explain: every other
// watch on the file system measures (here 8, whose measures cost nothing, to isolate it).
func BenchmarkDiskLedger(b *testing.B) {
	ws := b.TempDir()
	measure := func() (int64, error) { return 0, nil }
	w := ledger.join(ws, measure)
	defer ledger.leave(w)
	b.Run("measure_alone", func(b *testing.B) {
		for b.Loop() {
			measure()
		}
	})
	b.Run("measure_in_ledger", func(b *testing.B) {
		for b.Loop() {
			ledger.take(w)
		}
	})
	for range 8 {
		o := ledger.join(ws, measure)
		defer ledger.leave(o)
	}
	b.Run("refresh_8_others", func(b *testing.B) {
		for b.Loop() {
			ledger.refresh(w)
		}
	})
}

// The disk ledger charges a running command with the growth of its file system that
// no running watch's measure explains. These tests run two "commands" on one file system of their own (a private
// tmpfs as root, so that nobody else's writes blur statfs), through WatchDisk alone.

// ownFS is a file system of size bytes for one test: a private tmpfs as root, else the
// test's temporary folder (shared with the host: others' writes then blur the result).
func ownFS(t *testing.T, size int64) string {
	t.Helper()
	dir := t.TempDir()
	if os.Geteuid() == 0 {
		if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size="+itoa(size)); err == nil {
			t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
		}
	}
	for _, d := range []string{"a", "b"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func itoa(n int64) string {
	b := []byte{}
	for n > 0 || len(b) == 0 {
		b = append([]byte{byte('0' + n%10)}, b...)
		n /= 10
	}
	return string(b)
}

// heldDeleted creates a file in dir, deletes it and allocates size bytes to it, and returns
// its descriptor: a file a program of a command holds open after deleting it.
func heldDeleted(t *testing.T, dir string, size int64) int {
	t.Helper()
	p := filepath.Join(dir, "held")
	fd, err := unix.Open(p, unix.O_CREAT|unix.O_RDWR|unix.O_CLOEXEC, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Unlink(p); err != nil {
		t.Fatal(err)
	}
	if size > 0 {
		if err := unix.Fallocate(fd, 0, 0, size); err != nil {
			t.Fatal(err)
		}
	}
	return fd
}

// blocksOf is the disk the open file fd takes.
func blocksOf(fd int) int64 {
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil {
		return 0
	}
	return st.Blocks * 512
}

// FALSE CUT. An honest command (a, a 16 MiB budget) is cut because another agent's
// command wrote 96 MiB on the same file system that no running watch's measure
// explains: (1) an agent with no disk budget runs no watch at all (budgets.go watchDisk
// returns at budget <= 0), so nothing ever explains its writes; (2) an agent with a
// large budget whose command writes fast and ends before its watch measured (it
// measures only once statfs grew past limit-measured, or every tenth look, one a second)
// leaves the ledger (leave) without a last measure. The daemon's own writes other than
// checkpoint objects (a rewind's restore, the copy a non-root daemon's preview restores
// before its watch starts, bound.go:60) are case (1) too.
func TestAnotherAgentsWritesNoWatchMeasuredAreNotChargedToThisCommand(t *testing.T) {
	for _, tc := range []struct {
		name  string
		limit int64
	}{{"the other agent has no disk budget", 0}, {"the other command ends before its watch measures", 1 << 30}} {
		t.Run(tc.name, func(t *testing.T) {
			fs := ownFS(t, 1<<30)
			a, b := filepath.Join(fs, "a"), filepath.Join(fs, "b")
			cut := make(chan error, 1)
			// An agent's watch looks once a second (budgets.go diskWatchEvery).
			stop := WatchDisk(a, 16<<20, 0, time.Second, func() (int64, error) { return DiskUsage(a) }, parking,
				func(n int64, err error) { cut <- err })
			defer stop()
			time.Sleep(50 * time.Millisecond)
			// An agent with no disk budget runs a watch that only measures (limit 0).
			stopB := WatchDisk(b, tc.limit, 0, time.Second, func() (int64, error) { return DiskUsage(b) }, parking, func(int64, error) {})
			f, err := os.Create(filepath.Join(b, "built"))
			if err != nil {
				t.Fatal(err)
			}
			if err := unix.Fallocate(int(f.Fd()), 0, 0, 96<<20); err != nil {
				t.Fatal(err)
			}
			f.Close()
			stopB() // its command ended: 96 MiB in its workspace, under its budget
			select {
			case err := <-cut:
				t.Fatalf("a command that wrote nothing, with a 16 MiB budget, was cut for another agent's 96 MiB: %v", err)
			case <-time.After(3 * time.Second):
			}
		})
	}
}

// BYPASS. A file another command's watch measured while that command held it (deleted,
// open) is freed when that command ends, after its watch's last look: the ledger keeps
// it explained (leave: "its files stay where they are"), so every running watch on the
// file system gets that much credit, again for each such command. A command (a, 8 MiB
// limit) parks 3 x 48 MiB where no listing names it, in step with a colluding agent's
// three commands (b, each within its budget), and is never cut.
func TestFreedBytesAnEndedWatchMeasuredAreNoCreditForAnotherCommand(t *testing.T) {
	fs := ownFS(t, 1<<30)
	a, b := filepath.Join(fs, "a"), filepath.Join(fs, "b")
	cut := make(chan error, 1)
	stop := WatchDisk(a, 8<<20, 0, 5*time.Millisecond, func() (int64, error) { return DiskUsage(a) }, parking,
		func(n int64, err error) { cut <- err })
	defer stop()
	time.Sleep(50 * time.Millisecond)
	for round := 1; round <= 3; round++ {
		var fd atomic.Int64
		var seen atomic.Int64
		fd.Store(-1)
		measure := func() (int64, error) { // Programs.DiskUsage: the walk and the deleted file held
			n, err := DiskUsage(b)
			if f := fd.Load(); f >= 0 {
				n += blocksOf(int(f))
			}
			seen.Store(n)
			return n, err
		}
		stopB := WatchDisk(b, 1<<30, 0, 20*time.Millisecond, measure, parking, func(int64, error) {})
		held := heldDeleted(t, b, 0) // created and deleted: b's program holds it...
		fd.Store(int64(held))
		if err := unix.Fallocate(held, 0, 0, 48<<20); err != nil { // ...and writes 48 MiB to it
			t.Fatal(err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for seen.Load() < 48<<20 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		unix.Close(int(fd.Swap(-1))) // b's command ends: the kernel frees what its programs held
		stopB()
		parkInSocket(t, a, 48<<20)
	}
	select {
	case err := <-cut:
		t.Logf("cut: %v", err)
	case <-time.After(time.Second):
		var st unix.Statfs_t
		unix.Statfs(a, &st)
		t.Fatalf("a command holding 144 MiB no listing shows (file system now %d MiB in use), past its 8 MiB limit, was never cut",
			int64(st.Blocks-st.Bfree)*int64(st.Bsize)>>20)
	}
}

// parkedInSocket is parkInSocket whose bytes are freed by the returned func (the
// command's sandbox ending) rather than at the test's end.
func parkedInSocket(t *testing.T, dir string, size int64) (free func()) {
	t.Helper()
	fd := heldDeleted(t, dir, size)
	defer unix.Close(fd)
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Sendmsg(pair[0], []byte("x"), unix.UnixRights(fd), nil, 0); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	free = func() { once.Do(func() { unix.Close(pair[0]); unix.Close(pair[1]) }) }
	t.Cleanup(free)
	return free
}

// watched runs WatchDisk on ws with limit for a command that parks, counting its
// measures, and sends on cut what it was cut with; the watch ends with the test.
func watched(t *testing.T, ws string, limit int64, measure func() (int64, error)) (measures *atomic.Int32, cut chan error) {
	measures, cut = &atomic.Int32{}, make(chan error, 1)
	stop := WatchDisk(ws, limit, 0, 5*time.Millisecond, func() (int64, error) { measures.Add(1); return measure() }, parking,
		func(n int64, err error) { cut <- err })
	t.Cleanup(stop)
	return measures, cut
}

// afterALook waits for the watch whose measures are counted by measures to measure
// once more: a fall of the file system is seen by the look that measures it.
func afterALook(t *testing.T, measures *atomic.Int32) {
	seen := measures.Load()
	testutil.Eventually(t, time.Minute, "a measure of the watch", func() bool { return measures.Load() > seen })
}

// wantUnexplainedCut waits for the watch to cut with ErrUnexplainedGrowth.
func wantUnexplainedCut(t *testing.T, cut chan error, what string) {
	t.Helper()
	select {
	case err := <-cut:
		var ug *ErrUnexplainedGrowth
		if !errors.As(err, &ug) {
			t.Fatalf("cut with %v; want the growth no measure explains named", err)
		}
	case <-time.After(time.Minute):
		t.Fatalf("never cut: %s", what)
	}
}

// What another command hid and its end freed is no room for the next: a command (64
// MiB limit) that starts while another holds 48 MiB no listing shows, and hides 96 MiB
// once that one ended, is cut.
func TestWatchDiskGivesNoCreditForWhatAnEndedCommandHid(t *testing.T) {
	fs := ownFS(t, 1<<30)
	a, b := filepath.Join(fs, "a"), filepath.Join(fs, "b")
	free := parkedInSocket(t, a, 48<<20)
	measures, cut := watched(t, b, 64<<20, func() (int64, error) { return DiskUsage(b) })
	free() // the other command ends: the kernel frees what it hid
	afterALook(t, measures)
	parkInSocket(t, b, 96<<20)
	wantUnexplainedCut(t, cut, "a command holding 96 MiB no listing shows, past its 64 MiB limit, after another freed 48 MiB")
}

// Deleting small files is no room either: what statfs finds freed beyond what the
// measure does (an inode of each) is a fall, not room. A command (64 MiB limit) that deletes 12,000
// one-byte files its workspace held and then hides 100 MiB is cut.
func TestWatchDiskGivesNoCreditForSmallFilesTheCommandDeleted(t *testing.T) {
	fs := ownFS(t, 1<<30)
	ws := filepath.Join(fs, "a")
	smallFiles(t, ws, 120, 100)
	measured, err := DiskUsage(ws)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex // the deletion lands between two looks
	measures, cut := watched(t, ws, 64<<20, func() (int64, error) { mu.Lock(); defer mu.Unlock(); return DiskUsage(ws) })
	mu.Lock()
	for d := range 120 {
		if err := os.RemoveAll(filepath.Join(ws, "pkg"+itoa(int64(d)))); err != nil {
			t.Fatal(err)
		}
	}
	mu.Unlock()
	afterALook(t, measures)
	parkInSocket(t, ws, 100<<20)
	wantUnexplainedCut(t, cut, fmt.Sprintf("a command holding 100 MiB no listing shows, past its 64 MiB limit, after deleting %d MiB of small files", measured>>20))
}

// A watch starts from a measure of what the workspace holds, never from a size kept
// from before or an estimate, whose difference its first measure would explain as
// growth statfs never saw: a command (32 MiB limit) in a workspace of 24 MiB that hides
// 48 MiB is cut.
func TestWatchDiskStartsFromAMeasureOfWhatTheWorkspaceHolds(t *testing.T) {
	fs := ownFS(t, 1<<30)
	ws := filepath.Join(fs, "a")
	allocate(t, filepath.Join(ws, "build.o"), 24<<20)
	_, cut := watched(t, ws, 32<<20, func() (int64, error) { return DiskUsage(ws) })
	parkInSocket(t, ws, 48<<20)
	wantUnexplainedCut(t, cut, "a command holding 48 MiB no listing shows beside a 24 MiB workspace, past its 32 MiB limit")
}

// smallFiles makes dirs folders pkgN in ws of files one-byte files each.
func smallFiles(t *testing.T, ws string, dirs, files int) {
	t.Helper()
	for d := range dirs {
		dir := filepath.Join(ws, "pkg"+itoa(int64(d)))
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for f := range files {
			if err := os.WriteFile(filepath.Join(dir, "f"+itoa(int64(f))), []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// A command whose programs park no descriptors is never cut for growth it did not
// make, however its file system grows: a program on the host writing, another command
// hiding bytes under its own larger budget, or writing and then making its workspace
// unmeasurable, or making 12,000 small files (whose inodes statfs counts).
func TestWatchDiskCutsNoCommandThatParksNothingForOthersGrowth(t *testing.T) {
	for _, tc := range []struct {
		name string
		do   func(t *testing.T, fs, b string)
	}{
		{"a program on the host writes", func(t *testing.T, fs, b string) { allocate(t, filepath.Join(fs, "built"), 96<<20) }},
		{"another command hides under its own budget", func(t *testing.T, fs, b string) { parkInSocket(t, b, 96<<20) }},
		{"another command writes and makes its workspace unmeasurable", func(t *testing.T, fs, b string) {
			writeDeep(t, b, maxUsageDepth+1, 0)
			allocate(t, filepath.Join(b, "big"), 96<<20)
		}},
		{"another command makes many small files", func(t *testing.T, fs, b string) { smallFiles(t, b, 120, 100) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := ownFS(t, 1<<30)
			a, b := filepath.Join(fs, "a"), filepath.Join(fs, "b")
			var looks atomic.Int32
			cutA := make(chan error, 1)
			stopA := WatchDisk(a, 16<<20, 0, 5*time.Millisecond, func() (int64, error) { looks.Add(1); return DiskUsage(a) }, parksNothing,
				func(n int64, err error) { cutA <- err })
			defer stopA()
			stopB := WatchDisk(b, 1<<30, 0, time.Second, func() (int64, error) { return DiskUsage(b) }, parking, func(int64, error) {})
			defer stopB()
			tc.do(t, fs, b)
			seen := looks.Load()
			testutil.Eventually(t, time.Minute, "twenty more measures of the innocent watch, or a cut", func() bool { return looks.Load() >= seen+20 || len(cutA) > 0 })
			select {
			case err := <-cutA:
				t.Fatalf("a command that parks nothing and wrote nothing (16 MiB limit) was cut when %s: %v", tc.name, err)
			default:
			}
		})
	}
}
