package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/testutil"
)

const pkgA = "github.com/agentd/agentd/daemon/a"

// t0 is when the heartbeat tests' events happen; their clocks count from it.
var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// beating returns a summary with a 30 s beat that has taken in events, all at t0, and
// what it has printed.
func beating(events ...event) (*summary, *strings.Builder) {
	out := &strings.Builder{}
	s := newSummary(out, "github.com/agentd/agentd/", 30*time.Second)
	for _, e := range events {
		s.event(e, t0)
	}
	return s, out
}

// feed runs the JSON lines through run, as main does, and returns what it printed.
func feed(t *testing.T, lines ...string) (string, bool) {
	t.Helper()
	var out strings.Builder
	s := newSummary(&out, "github.com/agentd/agentd/", time.Hour)
	failed := run(s, strings.NewReader(strings.Join(lines, "\n")+"\n"))
	return out.String(), failed
}

func TestSummary(t *testing.T) {
	tests := []struct {
		name       string
		lines      []string
		wantFailed bool
		want       []string // each must appear in the output
		notWant    []string
	}{
		{
			name: "passing_package_names_its_slow_tests",
			lines: []string{
				`{"Action":"start","Package":"` + pkgA + `"}`,
				`{"Action":"run","Package":"` + pkgA + `","Test":"TestSlow"}`,
				`{"Action":"output","Package":"` + pkgA + `","Test":"TestSlow","Output":"noise\n"}`,
				`{"Action":"pass","Package":"` + pkgA + `","Test":"TestSlow","Elapsed":12.34}`,
				`{"Action":"pass","Package":"` + pkgA + `","Test":"TestQuick","Elapsed":0.1}`,
				`{"Action":"pass","Package":"` + pkgA + `","Elapsed":12.5}`,
			},
			want:    []string{"ok    daemon/a", "12.5s", "slowest: TestSlow 12.3s", "2 passed, 0 failed, 0 skipped"},
			notWant: []string{"noise", "TestQuick"},
		},
		{
			name: "failing_subtest_printed_in_full_once_at_the_end",
			lines: []string{
				`{"Action":"run","Package":"` + pkgA + `","Test":"TestX"}`,
				`{"Action":"run","Package":"` + pkgA + `","Test":"TestX/case"}`,
				`{"Action":"output","Package":"` + pkgA + `","Test":"TestX/case","Output":"    x_test.go:9: want 1, got 2\n"}`,
				`{"Action":"fail","Package":"` + pkgA + `","Test":"TestX/case","Elapsed":0.01}`,
				`{"Action":"fail","Package":"` + pkgA + `","Test":"TestX","Elapsed":0.02}`,
				`{"Action":"fail","Package":"` + pkgA + `","Elapsed":0.5}`,
			},
			wantFailed: true,
			want:       []string{"FAIL  daemon/a", "=== FAIL: daemon/a TestX/case", "x_test.go:9: want 1, got 2", "0 passed, 2 failed, 0 skipped"},
			notWant:    []string{"=== FAIL: daemon/a TestX ("},
		},
		{
			name: "panic_without_a_failed_test_shows_the_package_output",
			lines: []string{
				`{"Action":"run","Package":"` + pkgA + `","Test":"TestP"}`,
				`{"Action":"output","Package":"` + pkgA + `","Output":"panic: boom\n"}`,
				`{"Action":"fail","Package":"` + pkgA + `","Elapsed":1}`,
			},
			wantFailed: true,
			want:       []string{"no single test failed", "panic: boom"},
		},
		{
			name: "build_failure_is_a_failure_with_the_compiler_output",
			lines: []string{
				`{"Action":"build-output","ImportPath":"` + pkgA + ` [` + pkgA + `.test]","Output":"a.go:3:1: syntax error\n"}`,
				`{"Action":"build-fail","ImportPath":"` + pkgA + ` [` + pkgA + `.test]"}`,
			},
			wantFailed: true,
			want:       []string{"=== BUILD FAILED: daemon/a", "a.go:3:1: syntax error"},
		},
		{
			name:  "lines_that_are_not_json_pass_through",
			lines: []string{`go: downloading example.com/x v1.0.0`},
			want:  []string{"go: downloading example.com/x v1.0.0", "0 passed, 0 failed, 0 skipped"},
		},
		{
			name:  "package_without_tests",
			lines: []string{`{"Action":"output","Package":"` + pkgA + `","Output":"?   \tx\t[no test files]\n"}`, `{"Action":"skip","Package":"` + pkgA + `","Elapsed":0}`},
			want:  []string{"--    daemon/a", "(no tests)"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, failed := feed(t, tt.lines...)
			if failed != tt.wantFailed {
				t.Errorf("failed = %v, want %v; output:\n%s", failed, tt.wantFailed, got)
			}
			testutil.CheckContains(t, "output", got, tt.want, tt.notWant)
		})
	}
}

// TestHeartbeatNamesTheRunningTests: a package past one beat says which tests run now,
// innermost only, and a finished package or a young one says nothing.
func TestHeartbeatNamesTheRunningTests(t *testing.T) {
	s, out := beating(
		event{Action: "start", Package: pkgA},
		event{Action: "run", Package: pkgA, Test: "TestAttack"},
		event{Action: "run", Package: pkgA, Test: "TestAttack/files"},
		event{Action: "run", Package: pkgA, Test: "TestDone"},
		event{Action: "pass", Package: pkgA, Test: "TestDone"},
	)
	s.event(event{Action: "start", Package: pkgA + "/young"}, t0.Add(50*time.Second))
	s.heartbeat(t0.Add(10 * time.Second))
	if out.Len() != 0 {
		t.Fatalf("a package younger than a beat should say nothing, got %q", out.String())
	}
	s.heartbeat(t0.Add(65 * time.Second))
	got := out.String()
	if want := "..    daemon/a"; !strings.Contains(got, want) || !strings.Contains(got, "1m5s so far, running TestAttack/files\n") {
		t.Errorf("heartbeat = %q, want the package and its running innermost test", got)
	}
	if strings.Contains(got, "young") || strings.Contains(got, "TestDone") {
		t.Errorf("heartbeat = %q names a young package or a finished test", got)
	}
	s.event(event{Action: "pass", Package: pkgA, Test: "TestAttack/files"}, t0)
	s.event(event{Action: "pass", Package: pkgA, Test: "TestAttack"}, t0)
	s.event(event{Action: "pass", Package: pkgA}, t0)
	out.Reset()
	s.heartbeat(t0.Add(95 * time.Second))
	if strings.Contains(out.String(), "daemon/a ") || !strings.Contains(out.String(), "daemon/a/young") {
		t.Errorf("heartbeat after the package ended = %q", out.String())
	}
	out.Reset()
	s.event(event{Action: "pass", Package: pkgA + "/young"}, t0.Add(100*time.Second))
	s.heartbeat(t0.Add(140 * time.Second))
	if want := "no test running for 40s: go test is compiling"; !strings.Contains(out.String(), want) {
		t.Errorf("heartbeat with nothing running = %q, want %q", out.String(), want)
	}
}

// TestHeartbeatTrustsTheReportLine: test2json holds a parallel test's pass event until the
// package prints more, so the heartbeat takes the "--- PASS" line as the test's end.
func TestHeartbeatTrustsTheReportLine(t *testing.T) {
	s, out := beating(
		event{Action: "start", Package: pkgA},
		event{Action: "run", Package: pkgA, Test: "TestRealRun"},
		event{Action: "run", Package: pkgA, Test: "TestRealTeam"},
		event{Action: "run", Package: pkgA, Test: "TestRealTeam/sub"},
		event{Action: "output", Package: pkgA, Test: "TestRealRun", Output: "--- PASS: TestRealRun (223.94s)\n"},
		event{Action: "output", Package: pkgA, Test: "TestRealTeam/sub", Output: "    --- FAIL: TestRealTeam/sub (1.00s)\n"},
		event{Action: "output", Package: pkgA, Test: "TestRealTeam", Output: "    --- PASS: TestRealRunner (1.00s)\n"},
	)
	s.heartbeat(t0.Add(time.Minute))
	if got, want := out.String(), "1m0s so far, running TestRealTeam\n"; !strings.HasSuffix(got, want) {
		t.Errorf("heartbeat = %q, want it to end %q: TestRealRun and TestRealTeam/sub have reported", got, want)
	}
	if s.passed+s.failed != 0 {
		t.Errorf("counted %d passed, %d failed before their events came", s.passed, s.failed)
	}
}

// TestTickKeepsTheScreenAlive: whatever runs, tick prints something at least once a beat,
// and it does not beat when lines came recently and a beat has not passed.
func TestTickKeepsTheScreenAlive(t *testing.T) {
	tests := []struct {
		name     string
		events   []event // all at t0
		lastOut  time.Duration
		lastBeat time.Duration
		at       time.Duration
		want     string // "" means nothing printed
	}{
		{"quiet_with_only_young_packages_names_them", []event{{Action: "start", Package: pkgA}}, 0, 0, 29500 * time.Millisecond, "..    running daemon/a\n"},
		{"quiet_with_nothing_running_says_go_test_compiles", nil, 0, 0, 30 * time.Second, "..    no package running: go test is compiling test binaries\n"},
		{"quiet_with_an_old_package_gives_its_heartbeat", []event{{Action: "start", Package: pkgA}, {Action: "run", Package: pkgA, Test: "TestLong"}}, 0, 0, 40 * time.Second, "..    daemon/a                                 40s so far, running TestLong\n"},
		{"recent_line_and_recent_beat_say_nothing", []event{{Action: "start", Package: pkgA}}, 35 * time.Second, 20 * time.Second, 40 * time.Second, ""},
		{"a_beat_after_the_last_one_beats_though_lines_came", []event{{Action: "start", Package: pkgA}, {Action: "run", Package: pkgA, Test: "TestLong"}}, 59 * time.Second, 30 * time.Second, 60 * time.Second, "..    daemon/a                                1m0s so far, running TestLong\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, out := beating(tt.events...)
			s.lastOut, s.lastBeat = t0.Add(tt.lastOut), t0.Add(tt.lastBeat)
			s.tick(t0.Add(tt.at))
			if got := out.String(); got != tt.want {
				t.Errorf("tick printed %q, want %q", got, tt.want)
			}
		})
	}
}

// TestLongestSilenceIsABeat drives tick every second through four minutes of packages that
// start, log without printing and end, and measures the longest stretch with no line.
func TestLongestSilenceIsABeat(t *testing.T) {
	var out strings.Builder
	every := 30 * time.Second
	s := newSummary(&out, "github.com/agentd/agentd/", every)
	s.lastOut, s.lastBeat = t0, t0
	longest, last := time.Duration(0), t0
	for sec := 1; sec <= 240; sec++ {
		now := t0.Add(time.Duration(sec) * time.Second)
		pkg := fmt.Sprintf("%s/p%d", pkgA, sec/60) // a new package every minute, ending 55 s in
		switch sec % 60 {
		case 1:
			s.event(event{Action: "start", Package: pkg}, now)
		case 56:
			s.event(event{Action: "pass", Package: pkg, Elapsed: 55}, now)
		default:
			s.event(event{Action: "output", Package: pkg, Output: "log\n"}, now)
		}
		s.tick(now)
		if s.lastOut.After(last) {
			longest, last = max(longest, s.lastOut.Sub(last)), s.lastOut
		}
	}
	if longest > every-s.quietMargin() {
		t.Errorf("the longest silence was %v, want at most %v; output:\n%s", longest, every-s.quietMargin(), out.String())
	}
	if !strings.Contains(out.String(), "..    running daemon/a/p") {
		t.Errorf("no line named a young running package:\n%s", out.String())
	}
}
