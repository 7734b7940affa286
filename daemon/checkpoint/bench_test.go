package checkpoint

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// benchWorkspace makes a workspace of 10,000 files of about 1 KB in 100 folders, and a
// store with a settled checkpoint of it.
func benchWorkspace(b *testing.B) (s *Store, ws string, base Info) {
	ws = b.TempDir()
	for d := range 100 {
		dir := filepath.Join(ws, fmt.Sprintf("pkg%02d", d))
		if err := os.Mkdir(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		for f := range 100 {
			body := strings.Repeat(fmt.Sprintf("line of file %d/%d\n", d, f), 50)
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("file%02d.go", f)), []byte(body), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	s = openStore(b, Options{})
	return s, ws, settled(b, s, ws)
}

// change rewrites n of the workspace's files, spread over its folders, differently
// each round.
func change(b *testing.B, ws string, n, round int) {
	for i := range n {
		f := (round*n + i) % 10_000
		p := filepath.Join(ws, fmt.Sprintf("pkg%02d/file%02d.go", f%100, f/100))
		if err := os.WriteFile(p, []byte(fmt.Sprintf("round %d\n", round)), 0o644); err != nil {
			b.Fatal(err)
		}
	}
}

// report adds the p50 and p99 of the timed steps, in milliseconds, and returns them.
func report(b *testing.B, took []time.Duration) (p50, p99 float64) {
	slices.Sort(took)
	at := func(q float64) float64 {
		return float64(took[min(len(took)-1, int(q*float64(len(took))))]) / 1e6
	}
	p50, p99 = at(0.50), at(0.99)
	b.ReportMetric(p50, "p50-ms")
	b.ReportMetric(p99, "p99-ms")
	return p50, p99
}

// BenchmarkCheckpoint10kFilesNothingChanged times a checkpoint of an unchanged
// workspace, and beside each one the floor under a walk: a bare walk that lists every
// folder and stats every entry, nothing else. On a shared, loaded machine the absolute
// figures move with the load; floor-ratio (checkpoint p50 ÷ floor p50, measured in
// turns) is what the code adds. With the watcher armed (no event since the latest
// checkpoint) there is no walk: the ratio is far below 1.
func BenchmarkCheckpoint10kFilesNothingChanged(b *testing.B) { benchUnchanged(b, false) }

// BenchmarkCheckpoint10kFilesNothingChangedWalked is the same with the watcher
// disarmed before each checkpoint, as after an event that changed nothing: the walk.
func BenchmarkCheckpoint10kFilesNothingChangedWalked(b *testing.B) { benchUnchanged(b, true) }

func benchUnchanged(b *testing.B, walk bool) {
	s, ws, base := benchWorkspace(b)
	var took, floor []time.Duration
	for b.Loop() {
		b.StopTimer()
		t0 := time.Now()
		if n := statWalk(b, ws); n != 10_100 {
			b.Fatalf("walked %d entries", n)
		}
		floor = append(floor, time.Since(t0))
		if walk {
			s.watch.armed = false
		}
		b.StartTimer()
		t0 = time.Now()
		c, err := s.Checkpoint(ctx, ws)
		took = append(took, time.Since(t0))
		if err != nil || c.ID != base.ID {
			b.Fatalf("checkpoint %d, %v; want the settled one (%d) again", c.ID, err, base.ID)
		}
	}
	p50, _ := report(b, took)
	slices.Sort(floor)
	f50 := float64(floor[len(floor)/2]) / 1e6
	b.ReportMetric(f50, "floor-p50-ms")
	b.ReportMetric(p50/f50, "floor-ratio")
}

// statWalk lists every folder under ws and stats every entry, one at a time, and
// returns how many it statted.
func statWalk(b *testing.B, ws string) int {
	ds, err := openRoot(ws, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer ds.close()
	buf := make([]byte, 32<<10)
	var walk func() int
	walk = func() int {
		names, err := readNames(ds.fd(), buf)
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for _, name := range names {
			var st unix.Stat_t
			if err := unix.Fstatat(ds.fd(), name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
				b.Fatal(err)
			}
			n++
			if kindOf(st.Mode) == kindDir {
				if _, err := ds.push(name); err != nil {
					b.Fatal(err)
				}
				n += walk()
				ds.pop()
			}
		}
		return n
	}
	return walk()
}

func BenchmarkCheckpoint10kFilesOneChanged(b *testing.B)     { benchChanged(b, 1) }
func BenchmarkCheckpoint10kFilesHundredChanged(b *testing.B) { benchChanged(b, 100) }

func benchChanged(b *testing.B, n int) {
	s, ws, _ := benchWorkspace(b)
	var took []time.Duration
	var stored int64
	round := 0
	for b.Loop() {
		b.StopTimer()
		round++
		change(b, ws, n, round)
		b.StartTimer()
		t0 := time.Now()
		c, err := s.Checkpoint(ctx, ws)
		took = append(took, time.Since(t0))
		if err != nil {
			b.Fatal(err)
		}
		stored += c.NewBytes
	}
	report(b, took)
	b.ReportMetric(float64(stored)/float64(len(took)), "stored-B/step")
}

func BenchmarkRestore10kFilesHundredChanged(b *testing.B) {
	s, ws, base := benchWorkspace(b)
	var took []time.Duration
	round := 0
	for b.Loop() {
		b.StopTimer()
		round++
		change(b, ws, 100, round)
		b.StartTimer()
		t0 := time.Now()
		r, err := s.Restore(ctx, ws, base.ID)
		took = append(took, time.Since(t0))
		if err != nil || r.Diff.Files != 100 {
			b.Fatalf("restore: %v, %v; want 100 files put back", err, r.Diff.Summary())
		}
	}
	report(b, took)
}
