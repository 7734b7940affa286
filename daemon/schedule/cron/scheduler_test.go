package cron

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/internal/testutil"
)

func every10(t *testing.T, c Concurrency) Schedule {
	return Schedule{ID: "s1", Spec: mustParse(t, "CRON_TZ=UTC */10 * * * *"), Concurrency: c}
}

func TestFiresOnTime(t *testing.T) {
	h := newHarness(t, day(9, 0).Add(30*time.Second))
	h.run(every10(t, ""))
	h.at(day(9, 5))
	if n := h.nstarts(); n != 0 {
		t.Fatalf("%d starts before 09:10", n)
	}
	h.at(day(9, 10))
	h.end("run1", api.RunFinished)
	h.at(day(9, 20))
	h.wantHistory("09:10 finished run1", "09:20 started run2")

	r := h.find(api.RunFinished)
	if !r.Started.Equal(day(9, 10)) || !r.Ended.Equal(day(9, 10)) || r.Steps != 3 || r.Tokens != 120 || r.Manual {
		t.Errorf("finished record = %+v", r)
	}
	if st, _ := h.s.Status("s1"); !st.Next.Equal(day(9, 30)) || !st.LastFired.Equal(day(9, 20)) {
		t.Errorf("status next %v, last fired %v; want 09:30, 09:20", st.Next, st.LastFired)
	}
}

func TestFiresOnTimerAlone(t *testing.T) {
	h := newHarness(t, day(9, 0))
	started := make(chan Firing, 1)
	h.start = func(_ context.Context, f Firing) (string, error) {
		started <- f
		return "r", nil
	}
	h.run(every10(t, ""))
	h.clk.Set(day(9, 10)) // no poke: only the timer wakes the loop
	select {
	case f := <-started:
		if !f.Scheduled.Equal(day(9, 10)) || f.ScheduleID != "s1" {
			t.Errorf("firing = %+v", f)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the timer did not wake the loop") // a failsafe; the test never waits for time
	}
}

func TestConcurrencyPolicies(t *testing.T) {
	tests := []struct {
		name   string
		policy Concurrency
		want   []string
	}{
		{"skip_if_running", ConcurrencySkip, []string{"09:10 finished run1", "09:20 skipped", "09:30 skipped"}},
		{"default_is_skip", "", []string{"09:10 finished run1", "09:20 skipped", "09:30 skipped"}},
		{"queue_one_then_skip", ConcurrencyQueue, []string{"09:10 finished run1", "09:20 started run2", "09:30 skipped"}},
		{"parallel", ConcurrencyParallel, []string{"09:10 finished run1", "09:20 started run2", "09:30 started run3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, day(9, 0))
			h.run(every10(t, tt.policy))
			h.at(day(9, 10))
			h.at(day(9, 20))
			h.at(day(9, 30))
			h.clk.Set(day(9, 35))
			h.end("run1", api.RunFinished)
			h.wantHistory(tt.want...)
			if tt.policy == ConcurrencyQueue {
				if r := h.find(api.RunQueued); !r.Scheduled.Equal(day(9, 20)) {
					t.Errorf("queued record = %+v", r)
				}
				h.mu.Lock()
				last := h.records[len(h.records)-1]
				h.mu.Unlock()
				if last.RunID != "run2" || !last.Started.Equal(day(9, 35)) || last.Reason != "" {
					t.Errorf("queued run started as %+v; want run2 at 09:35", last)
				}
			}
		})
	}
}

func TestMissedRuns(t *testing.T) {
	missed := []string{"04:00 missed", "05:00 missed", "06:00 missed", "07:00 missed", "08:00 missed"}
	tests := []struct {
		name   string
		policy MissedPolicy
		now    time.Time
		last   time.Time
		want   []string
		reason string // of the 04:00 record
	}{
		{"skip", MissedPolicy{}, day(9, 30), day(3, 0), append(missed, "09:00 missed"), "missed-run policy is skip"},
		{"run_once", MissedPolicy{Mode: MissedRunOnce}, day(9, 30), day(3, 0), append(missed, "09:00 started run1"),
			"one catch-up run was made, for 2026-01-05T09:00:00Z"},
		{"run_if_within_inside_window", MissedPolicy{Mode: MissedRunIfWithin, Window: 2 * time.Hour}, day(9, 30), day(3, 0),
			append(missed, "09:00 started run1"), "one catch-up run"},
		{"run_if_within_outside_window", MissedPolicy{Mode: MissedRunIfWithin, Window: 10 * time.Minute}, day(9, 30), day(3, 0),
			append(missed, "09:00 missed"), "more than the run_if_within window of 10m0s old"},
		{"on_time_firing_runs_with_skip", MissedPolicy{}, day(9, 0).Add(30 * time.Second), day(3, 0),
			append(missed, "09:00 started run1"), "missed-run policy is skip"},
		{"on_time_firing_covers_run_once", MissedPolicy{Mode: MissedRunOnce}, day(9, 0).Add(30 * time.Second), day(3, 0),
			append(missed, "09:00 started run1"), "the on-time firing at 2026-01-05T09:00:00Z ran for it"},
		{"nothing_missed", MissedPolicy{Mode: MissedRunOnce}, day(9, 30), day(9, 0), nil, ""},
		{"no_last_fired", MissedPolicy{Mode: MissedRunOnce}, day(9, 30), time.Time{}, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, tt.now)
			h.run(Schedule{ID: "s1", Spec: mustParse(t, "CRON_TZ=UTC 0 * * * *"), Missed: tt.policy, LastFired: tt.last})
			h.wantHistory(tt.want...)
			if tt.reason != "" {
				if r := h.find(api.RunMissed); !strings.Contains(r.Reason, tt.reason) {
					t.Errorf("missed reason %q, want %q", r.Reason, tt.reason)
				}
			}
			if st, _ := h.s.Status("s1"); !st.Next.Equal(day(10, 0)) {
				t.Errorf("next = %v, want 10:00", st.Next)
			}
		})
	}
}

func TestCatchUpRunReason(t *testing.T) {
	h := newHarness(t, day(9, 30))
	h.run(Schedule{ID: "s1", Spec: mustParse(t, "CRON_TZ=UTC 0 * * * *"), Missed: MissedPolicy{Mode: MissedRunOnce},
		LastFired: day(8, 0)})
	if r := h.find(api.RunStarted); r.Reason != "catch-up run, 30m0s late (the daemon was not running (or the machine slept) at the scheduled time)" {
		t.Errorf("catch-up reason = %q", r.Reason)
	}
}

func TestMissedAfterLongDowntime(t *testing.T) {
	h := newHarness(t, day(9, 30))
	h.run(Schedule{ID: "s1", Spec: mustParse(t, "CRON_TZ=UTC * * * * *"), Missed: MissedPolicy{Mode: MissedRunOnce},
		LastFired: day(9, 30).AddDate(0, 0, -30)})
	got := h.history()
	if len(got) != maxMissedRecords || got[0] != "07:51 missed" || got[len(got)-1] != "09:30 started run1" {
		t.Fatalf("%d records, first %q, last %q", len(got), got[0], got[len(got)-1])
	}
	if r := h.find(api.RunMissed); !strings.Contains(r.Reason, "earlier firings were missed too") {
		t.Errorf("first missed record's reason %q does not mention the earlier ones", r.Reason)
	}
}

func TestMissedEveryKeepsPhase(t *testing.T) {
	h := newHarness(t, day(5, 0))
	h.run(Schedule{ID: "s1", Spec: mustParse(t, "CRON_TZ=UTC @every 90m"), LastFired: day(0, 0)})
	h.wantHistory("01:30 missed", "03:00 missed", "04:30 missed")
	if st, _ := h.s.Status("s1"); !st.Next.Equal(day(6, 0)) {
		t.Errorf("next = %v, want 06:00", st.Next)
	}
}

func TestStartFailuresRecorded(t *testing.T) {
	tests := []struct {
		name   string
		start  func(context.Context, Firing) (string, error)
		reason string
	}{
		{"error", func(context.Context, Firing) (string, error) { return "", errors.New("agent busy") },
			"could not start: agent busy"},
		{"panic", func(context.Context, Firing) (string, error) { panic("boom") },
			"could not start: starter panicked: boom"},
		{"no_run_id", func(context.Context, Firing) (string, error) { return "", nil },
			"could not start: starter returned no run id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, day(9, 0))
			h.start = tt.start
			h.run(every10(t, ConcurrencySkip))
			h.at(day(9, 10))
			r := h.find(api.RunFailed)
			if r.Reason != tt.reason || !r.Ended.Equal(day(9, 10)) || r.RunID != "" {
				t.Errorf("failed record = %+v; want reason %q", r, tt.reason)
			}
			h.setStart(nil) // the next firing is not skipped: the failed one is not running
			h.at(day(9, 20))
			h.wantHistory("09:10 failed", "09:20 started run2")
		})
	}
}

func TestRunEndedBeforeStartReturns(t *testing.T) {
	h := newHarness(t, day(9, 0))
	h.start = func(ctx context.Context, f Firing) (string, error) {
		id := "fast-" + f.Scheduled.Format("1504")
		h.s.RunEnded(ctx, id, Result{Outcome: api.RunBudgetExhausted, Reason: "3 steps", Steps: 3})
		return id, nil
	}
	h.run(every10(t, ConcurrencySkip))
	h.at(day(9, 10))
	h.at(day(9, 20))
	h.wantHistory("09:10 budget_exhausted fast-0910", "09:20 budget_exhausted fast-0920")
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.records) != 4 || h.records[0].Outcome != api.RunStarted || h.records[1].Outcome != api.RunBudgetExhausted {
		t.Errorf("records out of order: %+v", h.records)
	}
}

func TestUnknownOutcomeRecordedFailed(t *testing.T) {
	h := newHarness(t, day(9, 0))
	h.run(every10(t, ""))
	h.at(day(9, 10))
	h.s.RunEnded(context.Background(), "run1", Result{Outcome: "done", Reason: "ok"})
	h.s.RunEnded(context.Background(), "not-ours", Result{Outcome: api.RunFinished})
	if r := h.find(api.RunFailed); r.Reason != `run ended with unknown outcome "done": ok` {
		t.Errorf("reason = %q", r.Reason)
	}
}

func TestPauseResume(t *testing.T) {
	h := newHarness(t, day(9, 0))
	h.run(every10(t, ""))
	ctx := context.Background()
	if err := h.s.Pause(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	if st, _ := h.s.Status("s1"); !st.Paused || !st.Next.IsZero() {
		t.Errorf("paused status = %+v", st)
	}
	h.at(day(9, 10))
	h.at(day(9, 25))
	if err := h.s.Resume(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	h.at(day(9, 30))
	h.wantHistory("09:30 started run1") // 09:10 and 09:20 are neither run nor missed
	if err := h.s.Pause(ctx, "nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Pause(unknown) = %v", err)
	}
}

func TestPauseDropsQueued(t *testing.T) {
	h := newHarness(t, day(9, 0))
	h.run(every10(t, ConcurrencyQueue))
	h.at(day(9, 10))
	h.at(day(9, 20))
	if err := h.s.Pause(context.Background(), "s1"); err != nil {
		t.Fatal(err)
	}
	h.end("run1", api.RunFinished)
	h.wantHistory("09:10 finished run1", "09:20 skipped")
	if r := h.find(api.RunSkipped); r.Reason != "the schedule was paused" {
		t.Errorf("reason = %q", r.Reason)
	}
}

func TestRunNow(t *testing.T) {
	h := newHarness(t, day(9, 0))
	h.run(every10(t, ""))
	ctx := context.Background()
	if err := h.s.Pause(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	h.clk.Set(day(9, 3))
	r, err := h.s.RunNow(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if r.Outcome != api.RunStarted || r.RunID != "run1" || !r.Manual || !r.Scheduled.Equal(day(9, 3)) {
		t.Errorf("RunNow on a paused schedule = %+v", r)
	}
	r, err = h.s.RunNow(ctx, "s1")
	if err != nil || r.Outcome != api.RunSkipped || r.Reason != "the previous run was still running" {
		t.Errorf("RunNow while running = %+v, %v; want skipped", r, err)
	}
	if _, err := h.s.RunNow(ctx, "nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("RunNow(unknown) = %v", err)
	}
	if st, _ := h.s.Status("s1"); len(st.Running) != 1 || st.Running[0] != "run1" {
		t.Errorf("running = %v", st.Running)
	}
}

func TestRemoveWhileRunning(t *testing.T) {
	h := newHarness(t, day(9, 0))
	h.run(every10(t, ConcurrencyQueue))
	h.at(day(9, 10))
	h.at(day(9, 20))
	if err := h.s.Remove(context.Background(), "s1"); err != nil {
		t.Fatal(err)
	}
	h.end("run1", api.RunFinished) // the run outlives its schedule; its end is recorded
	h.at(day(9, 30))
	h.wantHistory("09:10 finished run1", "09:20 skipped")
	if r := h.find(api.RunSkipped); r.Reason != "the schedule was removed" {
		t.Errorf("reason = %q", r.Reason)
	}
	if _, err := h.s.Status("s1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Status after Remove = %v", err)
	}
	if err := h.s.Remove(context.Background(), "s1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("second Remove = %v", err)
	}
}

func TestUpdateSpec(t *testing.T) {
	h := newHarness(t, day(9, 0))
	h.run(Schedule{ID: "s1", Spec: mustParse(t, "CRON_TZ=UTC 0 * * * *")})
	h.at(day(9, 25))
	sc := every10(t, ConcurrencyParallel)
	sc.LastFired = day(1, 0) // ignored
	if err := h.s.Update(context.Background(), sc); err != nil {
		t.Fatal(err)
	}
	h.at(day(9, 30))
	h.at(day(9, 40))
	h.wantHistory("09:30 started run1", "09:40 started run2") // nothing missed, parallel
	if err := h.s.Update(context.Background(), Schedule{ID: "nope", Spec: sc.Spec}); !errors.Is(err, ErrNotFound) {
		t.Errorf("Update(unknown) = %v", err)
	}
}

func TestAddErrors(t *testing.T) {
	spec := mustParse(t, "CRON_TZ=UTC 0 * * * *")
	tests := []struct {
		name string
		sc   Schedule
		want string
	}{
		{"duplicate", Schedule{ID: "s1", Spec: spec}, `schedule already exists: "s1"`},
		{"no_id", Schedule{Spec: spec}, "schedule has no id"},
		{"no_spec", Schedule{ID: "s2"}, `schedule "s2" has no spec`},
		{"bad_concurrency", Schedule{ID: "s2", Spec: spec, Concurrency: "always"}, `unknown concurrency policy "always"`},
		{"bad_missed_mode", Schedule{ID: "s2", Spec: spec, Missed: MissedPolicy{Mode: "later"}}, `unknown missed-run policy "later"`},
		{"within_without_window", Schedule{ID: "s2", Spec: spec, Missed: MissedPolicy{Mode: MissedRunIfWithin}},
			"run_if_within needs a positive window"},
	}
	h := newHarness(t, day(9, 0))
	h.run(Schedule{ID: "s1", Spec: spec})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := h.s.Add(tt.sc)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Add = %v, want %q", err, tt.want)
			}
		})
	}
	if got := h.s.List(); len(got) != 1 || got[0].ID != "s1" || got[0].Concurrency != ConcurrencySkip || got[0].Missed.Mode != MissedSkip {
		t.Errorf("List = %+v", got)
	}
}

func TestStop(t *testing.T) {
	h := newHarness(t, day(9, 0))
	h.run(every10(t, ""))
	h.s.Stop()
	h.s.Stop()
	if err := h.s.Start(context.Background()); err == nil {
		t.Error("Start after Stop succeeded")
	}
	if _, err := h.s.RunNow(context.Background(), "s1"); !errors.Is(err, ErrStopped) {
		t.Errorf("RunNow after Stop = %v", err)
	}
}

// TestConcurrentUse drives every method from several goroutines; run it with -race.
func TestConcurrentUse(t *testing.T) {
	h := newHarness(t, day(9, 0))
	h.run()
	ctx := context.Background()
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			id := fmt.Sprintf("s%d", g)
			sc := Schedule{ID: id, Spec: mustParse(t, "CRON_TZ=UTC * * * * *"), Concurrency: ConcurrencyQueue}
			if err := h.s.Add(sc); err != nil {
				t.Error(err)
			}
			for i := range 20 {
				r, _ := h.s.RunNow(ctx, id)
				h.s.RunEnded(ctx, r.RunID, Result{Outcome: api.RunFinished})
				_ = h.s.Pause(ctx, id)
				_ = h.s.Resume(ctx, id)
				_ = h.s.Update(ctx, sc)
				_, _ = h.s.Status(id)
				_ = h.s.List()
				if g == 0 {
					h.clk.Set(day(9, i+1))
				}
			}
		})
	}
	wg.Wait()
	for range 3 { // ending a run starts the queued firing, if any
		h.settle()
		for _, st := range h.s.List() {
			for _, id := range st.Running {
				h.s.RunEnded(ctx, id, Result{Outcome: api.RunFinished})
			}
		}
	}
	h.settle()
	for _, st := range h.s.List() {
		if len(st.Running) != 0 {
			t.Errorf("%s: runs still running: %v", st.ID, st.Running)
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	last := map[string]Record{}
	for _, r := range h.records {
		last[r.ID] = r
	}
	for _, r := range last {
		if !r.Outcome.Final() {
			t.Errorf("firing %s at %v ends as %s", r.ID, r.Scheduled, r.Outcome)
		}
	}
}

func TestPolicyParsing(t *testing.T) {
	tests := []struct {
		in, want, err string
	}{
		{"", "skip", ""},
		{"skip", "skip", ""},
		{"run_once", "run_once", ""},
		{"run_if_within=2h", "run_if_within=2h0m0s", ""},
		{"run_if_within(90m)", "run_if_within=1h30m0s", ""},
		{"run_if_within", "", "needs a positive window"},
		{"run_if_within=soon", "", `"soon" is not a duration`},
		{"run_if_within=-1h", "", "needs a positive window"},
		{"skip=1h", "", "only run_if_within takes a window"},
		{"later", "", `unknown missed-run policy "later"`},
	}
	for _, tt := range tests {
		p, err := ParseMissedPolicy(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("ParseMissedPolicy(%q) = %v, %v; want error %q", tt.in, p, err, tt.err)
			}
			continue
		}
		if err != nil || p.String() != tt.want {
			t.Errorf("ParseMissedPolicy(%q) = %v, %v; want %s", tt.in, p, err, tt.want)
		}
		if again, err := ParseMissedPolicy(p.String()); err != nil || again != p {
			t.Errorf("round trip of %q: %v, %v", tt.in, again, err)
		}
	}
	for in, want := range map[string]Concurrency{"": ConcurrencySkip, "skip": ConcurrencySkip, "queue": ConcurrencyQueue, "parallel": ConcurrencyParallel} {
		if c, err := ParseConcurrency(in); c != want || err != nil {
			t.Errorf("ParseConcurrency(%q) = %q, %v", in, c, err)
		}
	}
	if _, err := ParseConcurrency("both"); err == nil {
		t.Error("ParseConcurrency(both) succeeded")
	}
}

// benchSchedules returns n schedules firing hourly at spread minutes, in a few zones, so
// about n/60 fire each minute.
func benchSchedules(b *testing.B, n int) []Schedule {
	zones := []string{"UTC", "America/New_York", "Europe/Berlin", "Asia/Tokyo"}
	out := make([]Schedule, n)
	for i := range out {
		spec, err := Parse(fmt.Sprintf("CRON_TZ=%s %d * * * *", zones[i%len(zones)], i%60))
		if err != nil {
			b.Fatal(err)
		}
		out[i] = Schedule{ID: fmt.Sprintf("s%05d", i), Spec: spec, LastFired: day(8, 0)}
	}
	return out
}

// BenchmarkAdd10000 is the start-up cost of 10,000 schedules, missed firings included.
func BenchmarkAdd10000(b *testing.B) {
	scheds := benchSchedules(b, 10_000)
	for b.Loop() {
		s := New(Config{Starter: Starter(func(context.Context, Firing) (string, error) { return "r", nil }),
			Clock: fakeClock{testutil.NewClock(day(9, 30))}})
		for _, sc := range scheds {
			if err := s.Add(sc); err != nil {
				b.Fatal(err)
			}
		}
		s.tick(context.Background())
	}
}

// BenchmarkMinute10000 is the scheduler's work for one minute with 10,000 schedules.
func BenchmarkMinute10000(b *testing.B) {
	clk := fakeClock{testutil.NewClock(day(9, 0))}
	n := 0
	s := New(Config{Starter: Starter(func(context.Context, Firing) (string, error) {
		n++
		return fmt.Sprint("r", n), nil
	}), Clock: clk})
	for _, sc := range benchSchedules(b, 10_000) {
		sc.Concurrency = ConcurrencyParallel
		if err := s.Add(sc); err != nil {
			b.Fatal(err)
		}
	}
	s.tick(context.Background())
	for b.Loop() {
		clk.Set(clk.Now().Add(time.Minute))
		s.tick(context.Background())
	}
}
