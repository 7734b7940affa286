package localapi

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/api"
)

func TestScheduleRoutesThroughClient(t *testing.T) {
	digest := fakeSchedule()
	runs := fakeScheduleRuns()
	cases := []routeCase{
		{name: "schedules", call: func(ctx context.Context, c *api.Client) (any, error) { return c.Schedules().List(ctx) },
			want: []api.Schedule{digest}},
		{name: "schedule_by_name", call: func(ctx context.Context, c *api.Client) (any, error) { return c.Schedules().Get(ctx, "digest") },
			want: &digest},
		{name: "schedule_unknown_not_found", call: func(ctx context.Context, c *api.Client) (any, error) { return c.Schedules().Get(ctx, "nope") },
			wantErr: api.ErrNotFound, errText: `no schedule "nope"`},
		{name: "add_schedule", call: func(ctx context.Context, c *api.Client) (any, error) {
			return c.Schedules().Add(ctx, api.ScheduleRequest{Name: "hourly", Spec: "@hourly", Agent: "a1", Goal: "g"})
		}, want: &api.Schedule{ID: "s2", Name: "hourly", Spec: "@hourly", TimeZone: "UTC", Agent: "a1", Goal: "g",
			Delivery: "agentctl", Concurrency: "skip", Missed: "skip", CreatedAt: t0, NextTimes: []time.Time{t0.Add(time.Hour)}}},
		{name: "add_schedule_bad_spec_bad_request", call: func(ctx context.Context, c *api.Client) (any, error) {
			return c.Schedules().Add(ctx, api.ScheduleRequest{Name: "x", Spec: "TZ=0"})
		}, wantErr: api.ErrBadRequest, errText: `bad schedule spec: "TZ=0" names an unknown time zone`},
		{name: "add_schedule_duplicate_conflict", call: func(ctx context.Context, c *api.Client) (any, error) {
			return c.Schedules().Add(ctx, api.ScheduleRequest{Name: "digest", Spec: "@daily"})
		}, wantErr: api.ErrConflict, errText: `a schedule named "digest" exists already`},
		{name: "remove_schedule", call: func(ctx context.Context, c *api.Client) (any, error) { return nil, c.Schedules().Remove(ctx, "s1") }},
		{name: "remove_schedule_unknown_not_found", call: func(ctx context.Context, c *api.Client) (any, error) { return nil, c.Schedules().Remove(ctx, "x") },
			wantErr: api.ErrNotFound, errText: `no schedule "x"`},
		{name: "resume_not_paused_conflict", call: func(ctx context.Context, c *api.Client) (any, error) { return c.Schedules().Resume(ctx, "digest") },
			wantErr: api.ErrConflict, errText: "schedule digest is not paused already"},
		{name: "run_schedule", call: func(ctx context.Context, c *api.Client) (any, error) { return c.Schedules().Run(ctx, "digest") },
			want: &api.ScheduleRun{ID: "f3", ScheduleID: "s1", Scheduled: t0, Started: t0, Manual: true, Outcome: "started", RunID: "r10", AgentID: "a10"}},
		{name: "schedule_history", call: func(ctx context.Context, c *api.Client) (any, error) { return c.Schedules().History(ctx, "digest", 0) },
			want: runs},
		{name: "schedule_history_limit", call: func(ctx context.Context, c *api.Client) (any, error) { return c.Schedules().History(ctx, "digest", 1) },
			want: runs[:1]},
	}
	runRouteCases(t, cases)
	t.Run("pause", func(t *testing.T) {
		sock, _ := serve(t, newFake())
		s, err := (&api.Client{Socket: sock}).Schedules().Pause(t.Context(), "digest")
		if err != nil || !s.Paused || !s.Next.IsZero() {
			t.Errorf("pause = %+v, %v; want paused with no next fire time", s, err)
		}
	})
}

func TestScheduleHistoryBadLimit(t *testing.T) {
	sock, _ := serve(t, newFake())
	status, _, body := rawDo(t, sock, "GET", "/v0/schedules/digest/history?limit=-1", nil, "")
	if status != http.StatusBadRequest || !strings.Contains(body, `limit \"-1\": want a whole number`) {
		t.Errorf("GET history?limit=-1 = %d %s", status, body)
	}
}

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
