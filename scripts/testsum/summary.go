package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"
)

// event is one line of `go test -json` (see `go doc test2json`).
type event struct {
	Action     string
	Package    string
	Test       string
	Elapsed    float64 // seconds
	Output     string
	ImportPath string // build-output and build-fail events name the package here
}

// slowTest is the least time a test takes before a package's line names it.
const slowTest = 5 * time.Second

// quietCheck is how often run calls tick. tick beats a little before a beat of silence
// (see quietMargin), so the longest silence stays under one beat, whatever came before.
const quietCheck = time.Second

// quietMargin is how much sooner than a beat of silence tick speaks: the check's own
// granularity, and the moments before testsum starts that a person also waits through.
func (s *summary) quietMargin() time.Duration { return min(2*quietCheck, s.every/10) }

type testRun struct {
	name     string
	out      strings.Builder
	result   string // "", "pass", "fail", "skip"
	took     time.Duration
	reported bool // its "--- PASS" line came: test2json holds the pass event until more output
}

type pkgRun struct {
	started time.Time
	out     strings.Builder // package-level output: panics, timeouts, "FAIL" lines
	tests   map[string]*testRun
	order   []string
	done    bool
}

type summary struct {
	w        io.Writer
	trim     string
	every    time.Duration
	pkgs     map[string]*pkgRun
	builds   map[string]*strings.Builder // build output by import path
	failures []string                    // rendered in full at the end
	passed   int
	failed   int
	skipped  int
	broken   bool      // a package or build failed without a failing test to show for it
	last     time.Time // when the latest event arrived
	lastOut  time.Time // when the latest line was printed: silence is measured from here
	lastBeat time.Time // when tick last ran the heartbeat
}

func newSummary(w io.Writer, trim string, every time.Duration) *summary {
	return &summary{w: w, trim: trim, every: every, pkgs: map[string]*pkgRun{}, builds: map[string]*strings.Builder{}}
}

func (s *summary) name(pkg string) string { return strings.TrimPrefix(pkg, s.trim) }

// printf prints a line at now, which ends the silence the quiet check measures.
func (s *summary) printf(now time.Time, format string, args ...any) {
	fmt.Fprintf(s.w, format, args...)
	s.lastOut = now
}

func (s *summary) pkg(name string, now time.Time) *pkgRun {
	p := s.pkgs[name]
	if p == nil {
		p = &pkgRun{started: now, tests: map[string]*testRun{}}
		s.pkgs[name] = p
	}
	return p
}

// event takes one go test -json event; now is when it arrived.
func (s *summary) event(e event, now time.Time) {
	s.last = now
	switch e.Action {
	case "build-output":
		b := s.builds[e.ImportPath]
		if b == nil {
			b = &strings.Builder{}
			s.builds[e.ImportPath] = b
		}
		b.WriteString(e.Output)
		return
	case "build-fail":
		s.broken = true
		s.failures = append(s.failures, fmt.Sprintf("=== BUILD FAILED: %s\n%s", s.name(e.ImportPath), s.builds[e.ImportPath]))
		return
	}
	if e.Package == "" {
		return
	}
	p := s.pkg(e.Package, now)
	if e.Test == "" {
		s.packageEvent(e, p, now)
		return
	}
	t := p.tests[e.Test]
	if t == nil {
		t = &testRun{name: e.Test}
		p.tests[e.Test] = t
		p.order = append(p.order, e.Test)
	}
	switch e.Action {
	case "output":
		t.out.WriteString(e.Output)
		line := strings.TrimLeft(e.Output, " ")
		for _, r := range []string{"--- PASS: ", "--- FAIL: ", "--- SKIP: "} {
			t.reported = t.reported || strings.HasPrefix(line, r+e.Test+" ")
		}
	case "pass", "fail", "skip":
		t.result, t.took = e.Action, seconds(e.Elapsed)
		s.count(e.Action)
		if e.Action == "fail" && !p.hasFailedChild(e.Test) {
			s.failures = append(s.failures, fmt.Sprintf("=== FAIL: %s %s (%s)\n%s", s.name(e.Package), e.Test, round(t.took), t.out.String()))
		}
	}
}

func (s *summary) count(action string) {
	switch action {
	case "pass":
		s.passed++
	case "fail":
		s.failed++
	case "skip":
		s.skipped++
	}
}

// packageEvent handles the events of the package itself, printing its line when it ends.
func (s *summary) packageEvent(e event, p *pkgRun, now time.Time) {
	switch e.Action {
	case "output":
		p.out.WriteString(e.Output)
		return
	case "pass", "fail", "skip":
	default:
		return
	}
	p.done = true
	took := round(seconds(e.Elapsed))
	switch {
	case e.Action == "skip":
		s.printf(now, "--    %-36s (no tests)\n", s.name(e.Package))
	case e.Action == "pass":
		s.printf(now, "ok    %-36s %7s%s\n", s.name(e.Package), took, p.slowest())
	default:
		s.printf(now, "FAIL  %-36s %7s%s\n", s.name(e.Package), took, p.slowest())
		if !p.anyFailed() { // a panic, a timeout or TestMain: only the package's output tells
			s.broken = true
			s.failures = append(s.failures, fmt.Sprintf("=== FAIL: %s (no single test failed; the package's output)\n%s", s.name(e.Package), p.out.String()))
		}
	}
}

// heartbeat names what each package running longer than one beat is doing now; with none
// running, it says how long go test has been quiet (it is compiling test binaries).
func (s *summary) heartbeat(now time.Time) {
	beat := false
	defer func() {
		if !beat && !s.last.IsZero() && now.Sub(s.last) >= s.every {
			s.printf(now, "..    no test running for %s: go test is compiling test binaries\n", round(now.Sub(s.last)))
		}
	}()
	for _, name := range slices.Sorted(maps.Keys(s.pkgs)) {
		p := s.pkgs[name]
		if p.done || now.Sub(p.started) < s.every {
			continue
		}
		running := p.running()
		what := "running " + strings.Join(running, ", ")
		if len(running) == 0 {
			what = "between tests"
		}
		if len(running) > 3 {
			what = fmt.Sprintf("running %s and %d more", strings.Join(running[:3], ", "), len(running)-3)
		}
		s.printf(now, "..    %-36s %7s so far, %s\n", s.name(name), round(now.Sub(p.started)), what)
		beat = true
	}
}

// tick is called every quietCheck. It beats once a beat, and sooner when nothing was
// printed for almost a beat; when the heartbeat has nothing to say then (every running
// package is younger than a beat), it names the running packages anyway: the screen is
// never silent for longer than a beat.
func (s *summary) tick(now time.Time) {
	quiet := now.Sub(s.lastOut) >= s.every-s.quietMargin()
	if !quiet && now.Sub(s.lastBeat) < s.every {
		return
	}
	s.lastBeat = now
	s.heartbeat(now)
	if !quiet || now.Sub(s.lastOut) < s.every-s.quietMargin() {
		return // not quiet, or the heartbeat said something
	}
	var running []string
	for _, name := range slices.Sorted(maps.Keys(s.pkgs)) {
		if !s.pkgs[name].done {
			running = append(running, s.name(name))
		}
	}
	switch {
	case len(running) == 0:
		s.printf(now, "..    no package running: go test is compiling test binaries\n")
	case len(running) > 4:
		s.printf(now, "..    running %s and %d more packages\n", strings.Join(running[:4], ", "), len(running)-4)
	default:
		s.printf(now, "..    running %s\n", strings.Join(running, ", "))
	}
}

// finish prints every failure in full and the closing count; it reports whether anything failed.
func (s *summary) finish() bool {
	for _, f := range s.failures {
		fmt.Fprintf(s.w, "\n%s", f)
	}
	fmt.Fprintf(s.w, "\n%d passed, %d failed, %d skipped\n", s.passed, s.failed, s.skipped)
	return s.failed > 0 || s.broken
}

// running lists the tests started and not ended, innermost only (a parent waits on its subtests).
func (p *pkgRun) running() []string {
	var out []string
	for _, n := range p.order {
		if p.tests[n].ended() {
			continue
		}
		inner := false
		for _, m := range p.order {
			if strings.HasPrefix(m, n+"/") && !p.tests[m].ended() {
				inner = true
				break
			}
		}
		if !inner {
			out = append(out, n)
		}
	}
	return out
}

// slowest names the package's top-level tests that took slowTest or more, slowest first.
func (p *pkgRun) slowest() string {
	var slow []*testRun
	for _, n := range p.order {
		if t := p.tests[n]; !strings.Contains(n, "/") && t.took >= slowTest {
			slow = append(slow, t)
		}
	}
	if len(slow) == 0 {
		return ""
	}
	slices.SortStableFunc(slow, func(a, b *testRun) int { return int(b.took - a.took) })
	parts := make([]string, 0, 3)
	for _, t := range slow[:min(3, len(slow))] {
		parts = append(parts, fmt.Sprintf("%s %s", t.name, round(t.took)))
	}
	return "  slowest: " + strings.Join(parts, ", ")
}

// ended reports whether the test has finished, by its event or by its report line: a
// parallel test's pass event can come minutes after it ended, with the next test's output.
func (t *testRun) ended() bool { return t.result != "" || t.reported }

func (p *pkgRun) anyFailed() bool {
	for _, t := range p.tests {
		if t.result == "fail" {
			return true
		}
	}
	return false
}

func (p *pkgRun) hasFailedChild(name string) bool {
	for n, t := range p.tests {
		if t.result == "fail" && strings.HasPrefix(n, name+"/") {
			return true
		}
	}
	return false
}

func seconds(f float64) time.Duration { return time.Duration(f * float64(time.Second)) }

func round(d time.Duration) time.Duration {
	if d < 10*time.Second {
		return d.Round(10 * time.Millisecond)
	}
	return d.Round(100 * time.Millisecond)
}
