package commands

import (
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentd/agentd/internal/testutil"
)

// parkInSocket allocates size bytes to a file it creates in dir and deletes, then keeps
// its only descriptor in the queue of a socket pair (SCM_RIGHTS), which no /proc
// listing names: what a hostile command does to hide disk from every measure. The bytes
// are freed when the test ends.
func parkInSocket(t *testing.T, dir string, size int64) {
	t.Helper()
	fd, err := unix.Open(filepath.Join(dir, "parked"), unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if err := errors.Join(unix.Unlink(filepath.Join(dir, "parked")), unix.Fallocate(fd, 0, 0, size)); err != nil {
		t.Fatal(err)
	}
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(pair[0]); unix.Close(pair[1]) })
	if err := unix.Sendmsg(pair[0], []byte("x"), unix.UnixRights(fd), nil, 0); err != nil {
		t.Fatal(err)
	}
}

// A file deleted while its only descriptor waits in a socket's queue is in no listing,
// so no measure counts it; the file system's growth that nothing explains is charged to
// the running command all the same, and past its limit the watch cuts, saying so.
func TestWatchDiskCutsGrowthThatNoMeasureExplains(t *testing.T) {
	ws := t.TempDir()
	cut := make(chan error, 1)
	stop := WatchDisk(ws, 4<<20, 0, 0, time.Millisecond, func() (int64, error) { return DiskUsage(ws) },
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
	stopSmall := WatchDisk(small, 64<<20, 0, 0, time.Millisecond, func() (int64, error) { looks.Add(1); return DiskUsage(small) },
		func(n int64, err error) { cut <- err })
	defer stopSmall()
	stopBig := WatchDisk(big, 1<<40, 0, 0, time.Hour, func() (int64, error) { return DiskUsage(big) },
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
	w := ledger.join(ws, 0, measure)
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
		o := ledger.join(ws, 0, measure)
		defer ledger.leave(o)
	}
	b.Run("refresh_8_others", func(b *testing.B) {
		for b.Loop() {
			ledger.refresh(w)
		}
	})
}
