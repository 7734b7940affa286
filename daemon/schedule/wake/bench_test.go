package wake

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// fleet is n schedules, each watching the notes folder (files files) of a workspace of
// its own, as the daemon would check them at each firing.
type fleet struct {
	r   *rig
	ids []string
	ws  []string
	c   Conditions
}

func newFleet(tb testing.TB, n, files int) *fleet {
	tb.Helper()
	f := &fleet{r: newRig(tb, false), c: Conditions{Changed: []string{"notes"}}}
	for i := range n {
		ws := workspace(tb)
		for j := range files {
			write(tb, filepath.Join(ws, "notes", fmt.Sprintf("note-%03d.md", j)), fmt.Sprintf("# note %d\n\nsome text\n", j))
		}
		f.ids = append(f.ids, f.r.schedule(fmt.Sprintf("s-%03d", i)))
		f.ws = append(f.ws, ws)
	}
	for i, id := range f.ids { // the first look, and its run
		if v := f.r.fire(id, f.c, Target{Workspace: f.ws[i]}); v.Outcome != Wake {
			tb.Fatalf("first look of %s: %+v", id, v)
		}
	}
	return f
}

// minute fires every schedule once, as a minute's firings would, after changing one file
// in the workspaces of the schedules whose index is m modulo every (none when every is
// 0). It fails unless exactly those wake, each naming its changed file, and returns the
// thread CPU time of each check.
func (f *fleet) minute(tb testing.TB, m, every int, cpu []time.Duration) []time.Duration {
	tb.Helper()
	changed := func(i int) bool { return every > 0 && i%every == m%every }
	for i := range f.ids {
		if changed(i) {
			write(tb, filepath.Join(f.ws[i], "notes", "note-007.md"), fmt.Sprintf("# note 7\n\nminute %d\n", m))
		}
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for i, id := range f.ids {
		start := threadCPU()
		v := f.r.e.Check(context.Background(), id, f.c, Target{Workspace: f.ws[i]})
		cpu = append(cpu, threadCPU()-start)
		switch {
		case changed(i) && (!v.Wake || !strings.Contains(v.Observation, "modified file notes/note-007.md")):
			tb.Fatalf("minute %d: %s changed and its check says %s: %s\n%s", m, id, v.Outcome, v.Reason, v.Observation)
		case !changed(i) && v.Outcome != NothingToDo:
			tb.Fatalf("minute %d: %s did not change and its check says %s: %s", m, id, v.Outcome, v.Reason)
		case v.Wake:
			if err := f.r.e.Started(context.Background(), v); err != nil {
				tb.Fatal(err)
			}
		}
	}
	return cpu
}

// threadCPU is the CPU time the calling thread has used.
func threadCPU() time.Duration {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts)
	return time.Duration(ts.Nano())
}

func percentile(d []time.Duration, p float64) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, int(float64(len(s))*p))]
}

// BenchmarkQuietSchedules is the engine's side of the closing figures: 100 schedules,
// each watching a 50-file folder, checked once per simulated minute (one benchmark
// iteration is one minute: run it with -benchtime=30x for the half hour). With nothing
// changing not one wakes; with one in ten changing each minute exactly those wake, each
// naming its changed file. It reports the CPU time of one check (p50, p99) and the
// allocations per check in the first and the last minute (flat: the engine keeps nothing
// per firing).
func BenchmarkQuietSchedules(b *testing.B) {
	for _, tc := range []struct {
		name  string
		every int
	}{{"nothing_changing", 0}, {"one_in_ten_changing", 10}} {
		b.Run(tc.name, func(b *testing.B) {
			f := newFleet(b, 100, 50)
			var cpu []time.Duration
			var ms runtime.MemStats
			var firstAllocs, lastAllocs float64
			m := 0
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				runtime.ReadMemStats(&ms)
				before := ms.Mallocs
				cpu = f.minute(b, m, tc.every, cpu)
				runtime.ReadMemStats(&ms)
				lastAllocs = float64(ms.Mallocs-before) / float64(len(f.ids))
				if m == 0 {
					firstAllocs = lastAllocs
				}
				m++
			}
			b.ReportMetric(float64(percentile(cpu, 0.5).Microseconds()), "cpu-µs/check-p50")
			b.ReportMetric(float64(percentile(cpu, 0.99).Microseconds()), "cpu-µs/check-p99")
			b.ReportMetric(firstAllocs, "allocs/check-first-minute")
			b.ReportMetric(lastAllocs, "allocs/check-last-minute")
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(m*len(f.ids)), "wall-µs/check")
		})
	}
}

// TestQuietSchedulesHarness runs the benchmark's fleet small, so its assertions hold in
// every test run: nothing changing wakes nothing; one in ten changing wakes exactly those.
func TestQuietSchedulesHarness(t *testing.T) {
	for _, every := range []int{0, 10} {
		f := newFleet(t, 20, 10)
		for m := range 3 {
			f.minute(t, m, every, nil)
		}
	}
}

// BenchmarkCheckKinds is one quiet check of each kind: a 50-file folder unchanged, a page
// answered 304 (a loopback server), and a check command that exits 1 in the sandbox (its
// processes' CPU is not the daemon's, and not in cpu-µs/check).
func BenchmarkCheckKinds(b *testing.B) {
	ws := workspace(b)
	for j := range 50 {
		write(b, filepath.Join(ws, "notes", fmt.Sprintf("n%d.md", j)), "text\n")
	}
	p := newPage(b)
	p.set("page\n", `"v"`)
	kinds := []struct {
		name string
		c    Conditions
		tg   func() Target
	}{
		{"changed_50_files", Conditions{Changed: []string{"notes"}}, func() Target { return Target{Workspace: ws} }},
		{"url_not_modified", Conditions{URLs: []string{p.URL}}, func() Target { return Target{} }},
		{"command_exit_1", Conditions{Commands: []string{"exit 1"}}, func() Target { return Target{AgentID: "a-bench", Workspace: ws, Shell: sandboxShell(b)} }},
	}
	for _, k := range kinds {
		b.Run(k.name, func(b *testing.B) {
			r := newRig(b, false)
			id := r.schedule("s-kind")
			tg := k.tg()
			r.fire(id, k.c, tg)
			var cpu []time.Duration
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			b.ReportAllocs()
			for b.Loop() {
				start := threadCPU()
				if v := r.e.Check(context.Background(), id, k.c, tg); v.Outcome != NothingToDo {
					b.Fatalf("%s: %s", v.Outcome, v.Reason)
				}
				cpu = append(cpu, threadCPU()-start)
			}
			b.ReportMetric(float64(percentile(cpu, 0.5).Microseconds()), "cpu-µs/check-p50")
			b.ReportMetric(float64(percentile(cpu, 0.99).Microseconds()), "cpu-µs/check-p99")
		})
	}
}
