package localapi

import (
	"context"
	"time"

	"github.com/agentd/agentd/api"
)

// The fake's schedules: one, "digest" (id s1), with two run records. It keeps just
// enough rules to return each kind of error.

func fakeSchedule() api.Schedule {
	return api.Schedule{ID: "s1", Name: "digest", Spec: "0 9 * * 1-5", TimeZone: "UTC", Template: "digest",
		Goal: "summarize notes", Autonomy: api.Autonomy{Mode: "auto", Steps: 3}, Budget: api.Budget{MaxSteps: 3},
		Delivery: "agentctl", Concurrency: "skip", Missed: "skip", CreatedAt: t0, Next: t0.Add(24 * time.Hour)}
}

func fakeScheduleRuns() []api.ScheduleRun {
	return []api.ScheduleRun{
		{ID: "f2", ScheduleID: "s1", Scheduled: t0, Started: t0, Ended: t0.Add(time.Minute), Outcome: "budget_exhausted",
			Reason: "the run made 3 steps, its step budget", AgentID: "a9", RunID: "r9", Steps: 3, Tokens: 120},
		{ID: "f1", ScheduleID: "s1", Scheduled: t0.Add(-24 * time.Hour), Outcome: "missed", Reason: "the daemon was not running"},
	}
}

func (f *fakeService) findSchedule(ref string) (api.Schedule, error) {
	if s := fakeSchedule(); ref == s.ID || ref == s.Name {
		return s, nil
	}
	return api.Schedule{}, api.Errorf(api.ErrNotFound, "no schedule %q", ref)
}

func (f *fakeService) schedulesRoute(ctx context.Context, _ string, _ api.None) ([]api.Schedule, error) {
	return []api.Schedule{fakeSchedule()}, nil
}

func (f *fakeService) scheduleRoute(ctx context.Context, ref string, _ api.None) (*api.Schedule, error) {
	s, err := f.findSchedule(ref)
	return &s, err
}

func (f *fakeService) addScheduleRoute(ctx context.Context, _ string, req api.ScheduleRequest) (*api.Schedule, error) {
	switch {
	case req.Name == "digest":
		return nil, api.Errorf(api.ErrConflict, "a schedule named %q exists already", req.Name)
	case req.Spec == "TZ=0":
		return nil, api.Errorf(api.ErrBadRequest, "bad schedule spec: %q names an unknown time zone", req.Spec)
	}
	return &api.Schedule{ID: "s2", Name: req.Name, Spec: req.Spec, TimeZone: "UTC", Agent: req.Agent, Goal: req.Goal,
		Autonomy: req.Autonomy, Delivery: "agentctl", Concurrency: "skip", Missed: "skip", CreatedAt: t0,
		NextTimes: []time.Time{t0.Add(time.Hour)}}, nil
}

func (f *fakeService) removeScheduleRoute(ctx context.Context, ref string, _ api.None) (api.None, error) {
	_, err := f.findSchedule(ref)
	return api.None{}, err
}

func (f *fakeService) pauseScheduleRoute(ctx context.Context, ref string, _ api.None) (*api.Schedule, error) {
	s, err := f.findSchedule(ref)
	s.Paused, s.Next = true, time.Time{}
	return &s, err
}

func (f *fakeService) resumeScheduleRoute(ctx context.Context, ref string, _ api.None) (*api.Schedule, error) {
	s, err := f.findSchedule(ref)
	if err == nil {
		err = api.Errorf(api.ErrConflict, "schedule %s is not paused already", s.Name)
	}
	return nil, err
}

func (f *fakeService) runScheduleRoute(ctx context.Context, ref string, _ api.None) (*api.ScheduleRun, error) {
	if _, err := f.findSchedule(ref); err != nil {
		return nil, err
	}
	return &api.ScheduleRun{ID: "f3", ScheduleID: "s1", Scheduled: t0, Started: t0, Manual: true, Outcome: "started", RunID: "r10", AgentID: "a10"}, nil
}

func (f *fakeService) scheduleHistoryRoute(ctx context.Context, ref string, q api.ScheduleHistoryQuery) ([]api.ScheduleRun, error) {
	limit := q.Limit
	if _, err := f.findSchedule(ref); err != nil {
		return nil, err
	}
	runs := fakeScheduleRuns()
	if limit > 0 && limit < len(runs) {
		runs = runs[:limit]
	}
	return runs, nil
}
