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
