package schedule

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentd/agentd/api"
)

// A schedule's last fire time is the newest firing it made (scheduled or run-now, run,
// skipped or missed), never the moment it was added or resumed: a schedule that has not
// fired has none, in the JSON (no last_fired) and everywhere else.
func TestLastFiredIsTheNewestFiring(t *testing.T) {
	h := newHarness(t, at(12, 0))
	h.finishAtOnce()
	ctx := context.Background()
	h.add(api.ScheduleRequest{Name: "nightly", Spec: "0 3 * * *", Template: "night", Goal: "tidy up"})
	lastFired := func(when string) (single, listed api.Schedule) {
		t.Helper()
		s, err := h.c.Schedules().Get(ctx, "nightly")
		if err != nil {
			t.Fatal(err)
		}
		all, err := h.c.Schedules().List(ctx)
		if err != nil || len(all) != 1 {
			t.Fatalf("%s: schedules = %+v, %v", when, all, err)
		}
		if !s.LastFired.Equal(all[0].LastFired) {
			t.Errorf("%s: show says last fired %v, ls says %v", when, s.LastFired, all[0].LastFired)
		}
		return *s, all[0]
	}

	s, _ := lastFired("just added")
	if !s.LastFired.IsZero() {
		t.Errorf("a schedule that never fired has last_fired %v (it was added then)", s.LastFired)
	}
	b, _ := json.Marshal(s)
	if strings.Contains(string(b), "last_fired") {
		t.Errorf("the JSON of a schedule that never fired has last_fired: %s", b)
	}

	h.clock.set(at(12, 5))
	if _, err := h.c.Schedules().Pause(ctx, "nightly"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.c.Schedules().Resume(ctx, "nightly"); err != nil {
		t.Fatal(err)
	}
	if s, _ := lastFired("paused and resumed"); !s.LastFired.IsZero() {
		t.Errorf("resuming made last_fired %v; it never fired", s.LastFired)
	}

	h.clock.set(at(12, 10))
	r, err := h.c.Schedules().Run(ctx, "nightly")
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := lastFired("after run-now"); !s.LastFired.Equal(r.Scheduled) || !s.LastFired.Equal(at(12, 10)) {
		t.Errorf("after run-now at 12:10 last_fired is %v, want the run-now's %v", s.LastFired, r.Scheduled)
	}

	h.clock.set(at(3, 0).AddDate(0, 0, 1)) // its first scheduled firing
	h.waitHistory("nightly", "the 03:00 firing", func(rs []api.ScheduleRun) bool { return len(rs) == 2 && !rs[0].Manual })
	if s, _ := lastFired("after the 03:00 firing"); !s.LastFired.Equal(at(3, 0).AddDate(0, 0, 1)) {
		t.Errorf("after the 03:00 firing last_fired is %v", s.LastFired)
	}
}
