package cli_test

import (
	"context"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/internal/apitest"
)

// The fake daemon's schedules: "digest" (id s-1), weekdays at 9 in Europe/Berlin, with
// two records.
func cannedSchedule() *api.Schedule {
	berlin, _ := time.LoadLocation("Europe/Berlin")
	s := &api.Schedule{ID: "s-1", Name: "digest", Spec: "0 9 * * 1-5", TimeZone: "Europe/Berlin", Template: "digest",
		Goal: "summarize what changed in ~/notes", Autonomy: api.Autonomy{Mode: "auto"},
		Budget: api.Budget{MaxSteps: 3, MaxTime: "15m0s"}, Delivery: "agentctl", Concurrency: "skip", Missed: "run_once",
		CreatedAt: fixedTime, LastFired: time.Date(2026, 11, 20, 9, 0, 0, 0, berlin)}
	for d := 23; d <= 27; d++ {
		s.NextTimes = append(s.NextTimes, time.Date(2026, 11, d, 9, 0, 0, 0, berlin))
	}
	s.Next = s.NextTimes[0]
	return s
}

func cannedScheduleRuns() []api.ScheduleRun {
	return []api.ScheduleRun{
		{ID: "f-2", ScheduleID: "s-1", Scheduled: time.Date(2026, 11, 20, 8, 0, 0, 0, time.UTC), Started: fixedTime, Ended: fixedTime,
			Outcome: "budget_exhausted", Reason: "the run made 3 steps, its step budget", AgentID: "a-7", RunID: "r-7", Steps: 3, Tokens: 1234},
		{ID: "f-1", ScheduleID: "s-1", Scheduled: time.Date(2026, 11, 19, 8, 0, 0, 0, time.UTC), Outcome: "missed",
			Reason: "the daemon was not running (or the machine slept) at the scheduled time; missed-run policy is skip"},
	}
}

// schedule finds the canned schedule by id or name.
func schedule(ref string) (*api.Schedule, error) {
	s := cannedSchedule()
	if ref != s.ID && ref != s.Name {
		return nil, api.Errorf(api.ErrNotFound, "no schedule %q: see `agentctl schedule ls`", ref)
	}
	return s, nil
}

// scheduleRoutes sets the schedule routes of the fake daemon's api.
func (f *fakeDaemon) scheduleRoutes() {
	fk := &f.api
	apitest.Handle(fk, api.SchedulesRoute, func(context.Context, string, api.None) ([]api.Schedule, error) {
		return []api.Schedule{*cannedSchedule()}, nil
	})
	apitest.Handle(fk, api.AddScheduleRoute, func(_ context.Context, _ string, req api.ScheduleRequest) (*api.Schedule, error) {
		if req.Spec == "TZ=0" {
			return nil, api.Errorf(api.ErrBadRequest, `bad schedule spec: "TZ=0" names an unknown time zone "0": use an IANA name such as America/New_York`)
		}
		f.mu.Lock()
		f.schedules = append(f.schedules, req)
		f.mu.Unlock()
		s := cannedSchedule()
		s.ID, s.Name, s.Spec, s.Goal, s.Autonomy, s.LastFired = "s-2", req.Name, req.Spec, req.Goal, req.Autonomy, time.Time{}
		s.When = req.When
		return s, nil
	})
	apitest.Handle(fk, api.ScheduleRoute, func(_ context.Context, ref string, _ api.None) (*api.Schedule, error) {
		if ref == "fresh" { // just added: it never fired
			s := cannedSchedule()
			s.ID, s.Name, s.LastFired = "s-3", "fresh", time.Time{}
			return s, nil
		}
		if ref == "quiet" { // wake conditions whose check keeps failing
			s := cannedSchedule()
			s.ID, s.Name = "s-4", "quiet"
			s.When = &api.WakeConditions{Changed: []string{"notes", "inbox/new mail"}, URLs: []string{"https://example.com/feed"},
				OnFailure: "wake", FailAfter: 2}
			s.Wake = &api.WakeStatus{SeenAt: fixedTime, Failures: 2, Failing: true, FailedAt: fixedTime,
				LastError: "--when-url https://example.com/feed: fetching the page: connection refused"}
			return s, nil
		}
		s, err := schedule(ref)
		if s != nil { // totals come with the single-schedule call, from the run records
			s.Runs, s.Steps, s.Tokens = 1, 3, 1234
		}
		return s, err
	})
	apitest.Handle(fk, api.RemoveScheduleRoute, func(_ context.Context, ref string, _ api.None) (api.None, error) {
		_, err := schedule(ref)
		return api.None{}, err
	})
	apitest.Handle(fk, api.PauseScheduleRoute, func(_ context.Context, ref string, _ api.None) (*api.Schedule, error) {
		s, err := schedule(ref)
		if s != nil {
			s.Paused, s.Next, s.NextTimes = true, time.Time{}, nil
		}
		return s, err
	})
	apitest.Handle(fk, api.ResumeScheduleRoute, func(_ context.Context, ref string, _ api.None) (*api.Schedule, error) {
		return schedule(ref)
	})
	apitest.Handle(fk, api.RunScheduleRoute, func(_ context.Context, ref string, _ api.None) (*api.ScheduleRun, error) {
		if _, err := schedule(ref); err != nil {
			return nil, err
		}
		return &api.ScheduleRun{ID: "f-3", ScheduleID: "s-1", Scheduled: fixedTime, Started: fixedTime, Manual: true,
			Outcome: "started", RunID: "r-8", AgentID: "a-8"}, nil
	})
	apitest.Handle(fk, api.SetScheduleWhenRoute, func(_ context.Context, ref string, when api.WakeConditions) (*api.Schedule, error) {
		s, err := schedule(ref)
		if s != nil && len(when.Changed)+len(when.URLs)+len(when.Commands) > 0 {
			s.When = &when
		}
		return s, err
	})
	apitest.Handle(fk, api.ScheduleHistoryRoute, func(_ context.Context, ref string, q api.ScheduleHistoryQuery) ([]api.ScheduleRun, error) {
		if ref == "s-3" {
			return nil, nil
		}
		if ref == "s-4" {
			return []api.ScheduleRun{
				{ID: "f-6", ScheduleID: "s-4", Scheduled: time.Date(2026, 11, 20, 8, 2, 0, 0, time.UTC), Ended: fixedTime, Outcome: api.RunCheckFailed,
					Reason: "check failed (2 in a row): --when-url https://example.com/feed: fetching the page: connection refused"},
				{ID: "f-5", ScheduleID: "s-4", Scheduled: time.Date(2026, 11, 20, 8, 1, 0, 0, time.UTC), Ended: fixedTime, Outcome: api.RunNothingToDo,
					Reason: "nothing to do: notes, inbox/new mail unchanged since the last run"},
			}, nil
		}
		if _, err := schedule(ref); err != nil {
			return nil, err
		}
		runs := cannedScheduleRuns()
		if q.Limit == 1 {
			runs = runs[:1]
		}
		return runs, nil
	})
}
