package localapi

import (
	"context"
	"testing"

	"github.com/agentd/agentd/api"
)

func TestTeamRoutesThroughClient(t *testing.T) {
	t1 := fakeTeam()
	listed := fakeTeam()
	listed.Transcript = nil
	started := fakeTeam()
	started.ID, started.Task, started.Transcript, started.Turns = "t2", "x", nil, 0
	stopped := fakeTeam()
	stopped.Status, stopped.Reason = api.TeamStopped, "stopped by a person"
	cases := []routeCase{
		{name: "teams", call: func(ctx context.Context, c *api.Client) (any, error) { return c.Teams().List(ctx) },
			want: []api.TeamRun{listed}},
		{name: "team", call: func(ctx context.Context, c *api.Client) (any, error) { return c.Teams().Get(ctx, "t1") }, want: &t1},
		{name: "team_unknown_not_found", call: func(ctx context.Context, c *api.Client) (any, error) { return c.Teams().Get(ctx, "t9") },
			wantErr: api.ErrNotFound, errText: `no team run "t9"`},
		{name: "start_team", call: func(ctx context.Context, c *api.Client) (any, error) {
			return c.Teams().Start(ctx, api.TeamRunRequest{Workflow: "name = \"pair\"", Task: "x"})
		}, want: &started},
		{name: "start_team_empty_bad_request", call: func(ctx context.Context, c *api.Client) (any, error) {
			return c.Teams().Start(ctx, api.TeamRunRequest{Task: "x"})
		}, wantErr: api.ErrBadRequest, errText: "empty workflow: send the workflow file's content"},
		{name: "plan_team", call: func(ctx context.Context, c *api.Client) (any, error) {
			return c.Teams().Plan(ctx, api.TeamPlanRequest{Task: "x"})
		}, want: &api.TeamPlan{Workflow: "name = \"planned\"\n", Revised: true, Problems: []string{"no summarizing role"}}},
		{name: "plan_team_empty_bad_request", call: func(ctx context.Context, c *api.Client) (any, error) {
			return c.Teams().Plan(ctx, api.TeamPlanRequest{})
		}, wantErr: api.ErrBadRequest, errText: "empty task: say what the team should do"},
		{name: "stop_team", call: func(ctx context.Context, c *api.Client) (any, error) { return c.Teams().Stop(ctx, "t1") }, want: &stopped},
		{name: "team_events", call: func(ctx context.Context, c *api.Client) (any, error) {
			var got []api.Event
			err := c.Teams().Events(ctx, "t1", 0, func(ev api.Event) error { got = append(got, ev); return nil })
			return got, err
		}, want: []api.Event{{Type: api.EventTeam, AgentID: "t1", Team: &api.TeamEvent{TeamID: "t1", Status: api.TeamRunning, Turn: &t1.Transcript[0]}}}},
		{name: "team_events_since_last", call: func(ctx context.Context, c *api.Client) (any, error) {
			var got []api.Event
			err := c.Teams().Events(ctx, "t1", 1, func(ev api.Event) error { got = append(got, ev); return nil })
			return len(got), err
		}, want: 0},
		{name: "team_events_unknown_not_found", call: func(ctx context.Context, c *api.Client) (any, error) {
			return nil, c.Teams().Events(ctx, "t9", 0, func(api.Event) error { return nil })
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
