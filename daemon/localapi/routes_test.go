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
		{name: "schedules", call: func(ctx context.Context, c *api.Client) (any, error) {
			return api.SchedulesRoute.Do(ctx, c, "", api.None{})
		},
			want: []api.Schedule{digest}},
		{name: "schedule_by_name", call: func(ctx context.Context, c *api.Client) (any, error) {
			return api.ScheduleRoute.Do(ctx, c, "digest", api.None{})
		},
			want: &digest},
		{name: "schedule_unknown_not_found", call: func(ctx context.Context, c *api.Client) (any, error) {
			return api.ScheduleRoute.Do(ctx, c, "nope", api.None{})
		},
			wantErr: api.ErrNotFound, errText: `no schedule "nope"`},
		{name: "add_schedule", call: func(ctx context.Context, c *api.Client) (any, error) {
			return api.AddScheduleRoute.Do(ctx, c, "", api.ScheduleRequest{Name: "hourly", Spec: "@hourly", Agent: "a1", Goal: "g"})
		}, want: &api.Schedule{ID: "s2", Name: "hourly", Spec: "@hourly", TimeZone: "UTC", Agent: "a1", Goal: "g",
			Delivery: "agentctl", Concurrency: "skip", Missed: "skip", CreatedAt: t0, NextTimes: []time.Time{t0.Add(time.Hour)}}},
		{name: "add_schedule_bad_spec_bad_request", call: func(ctx context.Context, c *api.Client) (any, error) {
			return api.AddScheduleRoute.Do(ctx, c, "", api.ScheduleRequest{Name: "x", Spec: "TZ=0"})
		}, wantErr: api.ErrBadRequest, errText: `bad schedule spec: "TZ=0" names an unknown time zone`},
		{name: "add_schedule_duplicate_conflict", call: func(ctx context.Context, c *api.Client) (any, error) {
			return api.AddScheduleRoute.Do(ctx, c, "", api.ScheduleRequest{Name: "digest", Spec: "@daily"})
		}, wantErr: api.ErrConflict, errText: `a schedule named "digest" exists already`},
		{name: "remove_schedule", call: func(ctx context.Context, c *api.Client) (any, error) {
			return nil, api.RemoveScheduleRoute.Send(ctx, c, "s1", api.None{})
		}},
		{name: "remove_schedule_unknown_not_found", call: func(ctx context.Context, c *api.Client) (any, error) {
			return nil, api.RemoveScheduleRoute.Send(ctx, c, "x", api.None{})
		},
			wantErr: api.ErrNotFound, errText: `no schedule "x"`},
		{name: "resume_not_paused_conflict", call: func(ctx context.Context, c *api.Client) (any, error) {
			return api.ResumeScheduleRoute.Do(ctx, c, "digest", api.None{})
		},
			wantErr: api.ErrConflict, errText: "schedule digest is not paused already"},
		{name: "run_schedule", call: func(ctx context.Context, c *api.Client) (any, error) {
			return api.RunScheduleRoute.Do(ctx, c, "digest", api.None{})
		},
			want: &api.ScheduleRun{ID: "f3", ScheduleID: "s1", Scheduled: t0, Started: t0, Manual: true, Outcome: "started", RunID: "r10", AgentID: "a10"}},
		{name: "schedule_history", call: func(ctx context.Context, c *api.Client) (any, error) {
			return api.ScheduleHistoryRoute.Do(ctx, c, "digest", api.ScheduleHistoryQuery{Limit: 0})
		},
			want: runs},
		{name: "schedule_history_limit", call: func(ctx context.Context, c *api.Client) (any, error) {
			return api.ScheduleHistoryRoute.Do(ctx, c, "digest", api.ScheduleHistoryQuery{Limit: 1})
		},
			want: runs[:1]},
	}
	runRouteCases(t, cases)
	t.Run("pause", func(t *testing.T) {
		sock, _ := serve(t, newFake())
		s, err := api.PauseScheduleRoute.Do(t.Context(), &api.Client{Socket: sock}, "digest", api.None{})
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

func TestTeamRoutesThroughClient(t *testing.T) {
	t1 := fakeTeam()
	listed := fakeTeam()
	listed.Transcript = nil
	started := fakeTeam()
	started.ID, started.Task, started.Transcript, started.Turns = "t2", "x", nil, 0
	stopped := fakeTeam()
	stopped.Status, stopped.Reason = api.TeamStopped, "stopped by a person"
	cases := []routeCase{
		{name: "teams", call: func(ctx context.Context, c *api.Client) (any, error) {
			return api.TeamsRoute.Do(ctx, c, "", api.None{})
		},
			want: []api.TeamRun{listed}},
		{name: "team", call: func(ctx context.Context, c *api.Client) (any, error) {
			return api.TeamRoute.Do(ctx, c, "t1", api.None{})
		}, want: &t1},
		{name: "team_unknown_not_found", call: func(ctx context.Context, c *api.Client) (any, error) {
			return api.TeamRoute.Do(ctx, c, "t9", api.None{})
		},
			wantErr: api.ErrNotFound, errText: `no team run "t9"`},
		{name: "start_team", call: func(ctx context.Context, c *api.Client) (any, error) {
			return api.StartTeamRoute.Do(ctx, c, "", api.TeamRunRequest{Workflow: "name = \"pair\"", Task: "x"})
		}, want: &started},
		{name: "start_team_empty_bad_request", call: func(ctx context.Context, c *api.Client) (any, error) {
			return api.StartTeamRoute.Do(ctx, c, "", api.TeamRunRequest{Task: "x"})
		}, wantErr: api.ErrBadRequest, errText: "empty workflow: send the workflow file's content"},
		{name: "plan_team", call: func(ctx context.Context, c *api.Client) (any, error) {
			return api.PlanTeamRoute.Do(ctx, c, "", api.TeamPlanRequest{Task: "x"})
		}, want: &api.TeamPlan{Workflow: "name = \"planned\"\n", Revised: true, Problems: []string{"no summarizing role"}}},
		{name: "plan_team_empty_bad_request", call: func(ctx context.Context, c *api.Client) (any, error) {
			return api.PlanTeamRoute.Do(ctx, c, "", api.TeamPlanRequest{})
		}, wantErr: api.ErrBadRequest, errText: "empty task: say what the team should do"},
		{name: "stop_team", call: func(ctx context.Context, c *api.Client) (any, error) {
			return api.StopTeamRoute.Do(ctx, c, "t1", api.None{})
		}, want: &stopped},
		{name: "team_events", call: func(ctx context.Context, c *api.Client) (any, error) {
			var got []api.Event
			err := c.TeamEvents(ctx, "t1", 0, func(ev api.Event) error { got = append(got, ev); return nil })
			return got, err
		}, want: []api.Event{{Type: api.EventTeam, AgentID: "t1", Team: &api.TeamEvent{TeamID: "t1", Status: api.TeamRunning, Turn: &t1.Transcript[0]}}}},
		{name: "team_events_since_last", call: func(ctx context.Context, c *api.Client) (any, error) {
			var got []api.Event
			err := c.TeamEvents(ctx, "t1", 1, func(ev api.Event) error { got = append(got, ev); return nil })
			return len(got), err
		}, want: 0},
		{name: "team_events_unknown_not_found", call: func(ctx context.Context, c *api.Client) (any, error) {
			return nil, c.TeamEvents(ctx, "t9", 0, func(api.Event) error { return nil })
		}, wantErr: api.ErrNotFound, errText: `no team run "t9"`},
	}
	runRouteCases(t, cases)
}

// The fake's team runs: one, t1, running in state design. It keeps just enough rules to
// return each kind of error.

func fakeTeam() api.TeamRun {
	return api.TeamRun{ID: "t1", Workflow: "pair", Task: "a word counter", Status: api.TeamRunning, State: "design",
		Phase: "choose_language", Vars: map[string]string{"task": "a word counter"}, Turns: 1, MaxTurns: 40, CreatedAt: t0, UpdatedAt: t0,
		Transcript: []api.TeamTurn{{Seq: 1, Kind: api.TurnMessage, State: "design", Phase: "choose_language", Role: "ceo",
			Text: "Instruction: pick a language.", At: t0}}}
}

func (f *fakeService) teamsRoute(ctx context.Context, _ string, _ api.None) ([]api.TeamRun, error) {
	t := fakeTeam()
	t.Transcript = nil
	return []api.TeamRun{t}, nil
}

func (f *fakeService) startTeamRoute(ctx context.Context, _ string, req api.TeamRunRequest) (*api.TeamRun, error) {
	if req.Workflow == "" {
		return nil, api.Errorf(api.ErrBadRequest, "empty workflow: send the workflow file's content")
	}
	t := fakeTeam()
	t.ID, t.Task, t.Transcript, t.Turns = "t2", req.Task, nil, 0
	return &t, nil
}

func (f *fakeService) teamRoute(ctx context.Context, ref string, _ api.None) (*api.TeamRun, error) {
	if ref != "t1" {
		return nil, api.Errorf(api.ErrNotFound, "no team run %q", ref)
	}
	t := fakeTeam()
	return &t, nil
}

func (f *fakeService) stopTeamRoute(ctx context.Context, ref string, _ api.None) (*api.TeamRun, error) {
	t, err := f.teamRoute(ctx, ref, api.None{})
	if err != nil {
		return nil, err
	}
	t.Status, t.Reason = api.TeamStopped, "stopped by a person"
	return t, nil
}

func (f *fakeService) planTeamRoute(ctx context.Context, _ string, req api.TeamPlanRequest) (*api.TeamPlan, error) {
	if req.Task == "" {
		return nil, api.Errorf(api.ErrBadRequest, "empty task: say what the team should do")
	}
	return &api.TeamPlan{Workflow: "name = \"planned\"\n", Revised: true, Problems: []string{"no summarizing role"}}, nil
}

func (f *fakeService) SubscribeTeam(ref string, since int64) (<-chan api.Event, func(), error) {
	t, err := f.teamRoute(context.Background(), ref, api.None{})
	if err != nil {
		return nil, nil, err
	}
	ch := make(chan api.Event, len(t.Transcript))
	for i := range t.Transcript {
		if turn := t.Transcript[i]; int64(turn.Seq) > since {
			ch <- api.Event{Type: api.EventTeam, AgentID: t.ID, Team: &api.TeamEvent{TeamID: t.ID, Status: t.Status, Turn: &turn}}
		}
	}
	close(ch)
	return ch, func() {}, nil
}
