package testutil

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// recorder is a testing.TB that records failures instead of failing the real test.
type recorder struct {
	testing.TB
	mu     sync.Mutex
	failed bool
	msg    string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failed, r.msg = true, r.msg+fmt.Sprintf(format, args...)
}

func (r *recorder) Fatalf(format string, args ...any) { r.Errorf(format, args...); runtime.Goexit() }
func (r *recorder) Fatal(args ...any)                 { r.Errorf("%s", fmt.Sprint(args...)); runtime.Goexit() }

// record runs f on a recorder in its own goroutine, as Fatal ends the goroutine.
func record(t *testing.T, f func(tb testing.TB)) *recorder {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
	return r
}

func TestWait(t *testing.T) {
	var n atomic.Int32
	if !Wait(time.Second, func() bool { return n.Add(1) >= 3 }) {
		t.Fatal("Wait gave up on a condition true at the third call")
	}
	if got := n.Load(); got != 3 {
		t.Errorf("cond called %d times; want 3 (Wait returns as soon as it holds)", got)
	}
	start := time.Now()
	if Wait(30*time.Millisecond, func() bool { return false }) {
		t.Error("Wait reported a condition that never held")
	}
	if d := time.Since(start); d < 30*time.Millisecond {
		t.Errorf("Wait gave up after %v; want the full 30ms", d)
	}
}

func TestPollerBacksOff(t *testing.T) {
	var p poller
	var got []time.Duration
	for range 6 {
		p.sleep()
		got = append(got, p.every)
	}
	want := []time.Duration{4 * time.Millisecond, 8 * time.Millisecond, 16 * time.Millisecond, lastPoll, lastPoll, lastPoll}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("intervals after each sleep = %v; want %v", got, want)
	}
}

func TestHold(t *testing.T) {
	start := time.Now()
	if !Hold(30*time.Millisecond, func() bool { return true }) {
		t.Error("Hold reported a condition that always held as broken")
	}
	if d := time.Since(start); d < 30*time.Millisecond {
		t.Errorf("Hold returned after %v; want the full 30ms", d)
	}
	var n atomic.Int32
	start = time.Now()
	if Hold(5*time.Second, func() bool { return n.Add(1) < 3 }) {
		t.Error("Hold missed a condition broken at the third call")
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("Hold took %v to see the broken condition; want it at once", d)
	}
}

func TestEventually(t *testing.T) {
	ready := make(chan struct{})
	go func() { time.Sleep(10 * time.Millisecond); close(ready) }()
	r := record(t, func(tb testing.TB) {
		Eventually(tb, 5*time.Second, "the channel to close", func() bool {
			select {
			case <-ready:
				return true
			default:
				return false
			}
		})
	})
	if r.failed {
		t.Errorf("Eventually failed on a condition that came true: %s", r.msg)
	}
	r = record(t, func(tb testing.TB) {
		Eventually(tb, 20*time.Millisecond, "the sky to fall", func() bool { return false })
		tb.Errorf("Eventually returned after a timeout")
	})
	if !r.failed || r.msg != "timed out after 20ms waiting for the sky to fall" {
		t.Errorf("failure = %v %q; want the timeout naming what it waited for", r.failed, r.msg)
	}
}

func TestGolden(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "out.golden")
	tests := []struct {
		name    string
		update  bool
		got     string
		failed  bool
		message string // a piece of the failure
	}{
		{"missing_file", false, "a\n", true, "go test -update"},
		{"update_creates", true, "a\n", false, ""},
		{"same", false, "a\n", false, ""},
		{"different", false, "b\n", true, "differs from the golden file"},
		{"update_rewrites", true, "b\n", false, ""},
		{"same_after_update", false, "b\n", false, ""},
	}
	t.Cleanup(func() { *update = false })
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			*update = tt.update
			r := record(t, func(tb testing.TB) { Golden(tb, path, []byte(tt.got)) })
			if r.failed != tt.failed || !strings.Contains(r.msg, tt.message) {
				t.Errorf("failed = %v %q; want %v with %q", r.failed, r.msg, tt.failed, tt.message)
			}
		})
	}
}

func TestGoldenJSON(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v.json")
	t.Cleanup(func() { *update = false })
	*update = true
	GoldenJSON(t, path, map[string]any{"a": "<&>", "b": []int{1}})
	*update = false
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := "{\n  \"a\": \"<&>\",\n  \"b\": [\n    1\n  ]\n}\n"; string(b) != want {
		t.Errorf("file = %q; want %q", b, want)
	}
	GoldenJSON(t, path, map[string]any{"b": []int{1}, "a": "<&>"})
	if r := record(t, func(tb testing.TB) { GoldenJSON(tb, path, map[string]any{"a": 1}) }); !r.failed {
		t.Error("GoldenJSON passed a value that differs from the file")
	}
}

func TestSyncBuffer(t *testing.T) {
	var b SyncBuffer
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				b.Write([]byte("x"))
				_ = b.String()
			}
		})
	}
	wg.Wait()
	if got := len(b.String()); got != 800 {
		t.Errorf("len = %d; want 800 (a write was lost)", got)
	}
}

func TestShortTempDir(t *testing.T) {
	var dir string
	t.Run("inner_test_with_a_long_name_that_would_not_fit_a_socket_path_in_t_tempdir", func(t *testing.T) {
		dir = ShortTempDir(t)
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			t.Fatalf("ShortTempDir = %q: %v", dir, err)
		}
		if len(dir) > 60 {
			t.Errorf("ShortTempDir = %q (%d bytes); want room for a socket name under 100", dir, len(dir))
		}
	})
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("%s left after the test: %v", dir, err)
	}
}

func TestResolvedTempDir(t *testing.T) {
	dir := ResolvedTempDir(t)
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		t.Fatalf("ResolvedTempDir = %q: %v", dir, err)
	}
	if real, err := filepath.EvalSymlinks(dir); err != nil || real != dir {
		t.Errorf("ResolvedTempDir = %q, which resolves to %q (%v)", dir, real, err)
	}
}

func TestCheckContains(t *testing.T) {
	if r := record(t, func(tb testing.TB) {
		CheckContains(tb, "output", "one two three", []string{"one", "three"}, []string{"four"})
	}); r.failed {
		t.Errorf("CheckContains failed on text that has every wanted piece and no other: %s", r.msg)
	}
	r := record(t, func(tb testing.TB) {
		CheckContains(tb, "output", "one two three", []string{"one", "five"}, []string{"two", "four"})
	})
	for _, w := range []string{`output lacks "five"`, `output has "two", which it should leave out`} {
		if !strings.Contains(r.msg, w) {
			t.Errorf("CheckContains reported %q; want it to say %s", r.msg, w)
		}
	}
	if strings.Contains(r.msg, `"one"`) || strings.Contains(r.msg, `"four"`) {
		t.Errorf("CheckContains reported a piece that was as wanted: %q", r.msg)
	}
}
