package cron

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/internal/testutil"
)

// fakeClock is a Clock whose time moves only when the test sets it.
type fakeClock struct{ *testutil.Clock }

func (c fakeClock) NewTimer(d time.Duration) Timer { return c.Timer(d) }

// settle waits until the loop has handled every poke made before the call and gone idle,
// and the firings it launched have started (or not).
func (s *Scheduler) settle() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for target := s.pokes; s.settled < target || s.launching > 0; {
		s.idle.Wait()
	}
}

// harness runs a Scheduler on a fake clock with a Starter and Recorder that log calls.
type harness struct {
	t   *testing.T
	clk fakeClock
	s   *Scheduler

	mu      sync.Mutex
	starts  []Firing
	records []Record
	runs    int
	// start, if set, replaces the fake Starter's behavior.
	start func(ctx context.Context, f Firing) (string, error)
}

// day is the test date: 2026-01-05, a Monday.
func day(hour, min int) time.Time { return time.Date(2026, 1, 5, hour, min, 0, 0, time.UTC) }

func newHarness(t *testing.T, now time.Time) *harness {
	h := &harness{t: t, clk: fakeClock{testutil.NewClock(now)}}
	h.s = New(Config{
		Starter: Starter(func(ctx context.Context, f Firing) (string, error) {
			h.mu.Lock()
			h.starts = append(h.starts, f)
			h.runs++
			id, start := fmt.Sprintf("run%d", h.runs), h.start
			h.mu.Unlock()
			if start != nil {
				return start(ctx, f)
			}
			return id, nil
		}),
		Recorder: Recorder(func(ctx context.Context, r Record) error {
			if ctx.Err() != nil {
				t.Errorf("Record got a cancelled context")
			}
			h.mu.Lock()
			defer h.mu.Unlock()
			h.records = append(h.records, r)
			return nil
		}),
		Clock: h.clk,
	})
	return h
}

// run starts the loop with the given schedules and stops it when the test ends.
func (h *harness) run(scheds ...Schedule) {
	h.t.Helper()
	for _, sc := range scheds {
		if err := h.s.Add(sc); err != nil {
			h.t.Fatal(err)
		}
	}
	if err := h.s.Start(context.Background()); err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(h.s.Stop)
	h.settle()
}

func (h *harness) setStart(f func(ctx context.Context, f Firing) (string, error)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.start = f
}

func (h *harness) settle() {
	h.s.poke()
	h.s.settle()
}

// at moves the clock to now and waits for the loop to handle it.
func (h *harness) at(now time.Time) {
	h.clk.Set(now)
	h.settle()
}

func (h *harness) end(runID string, o api.RunOutcome) {
	h.s.RunEnded(context.Background(), runID, Result{Outcome: o, Steps: 3, Tokens: 120})
	h.settle()
}

// history lists each firing's latest record as "15:04 outcome [run]", in the order the
// firings were first recorded.
func (h *harness) history() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var order []string
	last := map[string]Record{}
	for _, r := range h.records {
		if _, ok := last[r.ID]; !ok {
			order = append(order, r.ID)
		}
		last[r.ID] = r
	}
	var out []string
	for _, id := range order {
		r := last[id]
		line := r.Scheduled.UTC().Format("15:04") + " " + string(r.Outcome)
		if r.RunID != "" {
			line += " " + r.RunID
		}
		out = append(out, line)
	}
	return out
}

func (h *harness) nstarts() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.starts)
}

// find returns the first record with outcome o.
func (h *harness) find(o api.RunOutcome) Record {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, r := range h.records {
		if r.Outcome == o {
			return r
		}
	}
	h.t.Fatalf("no record with outcome %s in %v", o, h.records)
	return Record{}
}

func (h *harness) wantHistory(want ...string) {
	h.t.Helper()
	if got := h.history(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		h.t.Errorf("history:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

func mustParse(t *testing.T, spec string) Spec {
	t.Helper()
	s, err := Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Parse is ParseIn in the machine's local time zone, as the tests write specs.
func Parse(spec string) (Spec, error) { return ParseIn(spec, time.Local) }

// Update replaces a schedule's settings (sc.LastFired is ignored). A new spec fires from
// now on; runs in progress and a queued firing stay.
func (s *Scheduler) Update(ctx context.Context, sc Schedule) error {
	if err := sc.normalize(); err != nil {
		return err
	}
	return s.change(ctx, sc.ID, func(Schedule) Schedule { return sc })
}
