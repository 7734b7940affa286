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
