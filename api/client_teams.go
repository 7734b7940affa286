package api

import "context"

// TeamClient reaches the daemon's team runs: c.Teams().Start(ctx, req).
type TeamClient struct{ c *Client }

// Teams returns the client for team runs, over c's transport.
func (c *Client) Teams() TeamClient { return TeamClient{c} }

// List lists the team runs, newest first, without transcripts.
func (t TeamClient) List(ctx context.Context) ([]TeamRun, error) {
	return TeamsRoute.Do(ctx, t.c, "", None{})
}

// Start starts a team run; a bad workflow gets ErrBadRequest naming file:line problems.
func (t TeamClient) Start(ctx context.Context, req TeamRunRequest) (*TeamRun, error) {
	return StartTeamRoute.Do(ctx, t.c, "", req)
}

// Get returns one team run with its transcript.
func (t TeamClient) Get(ctx context.Context, team string) (*TeamRun, error) {
	return TeamRoute.Do(ctx, t.c, team, None{})
}

// Stop stops a team run and the run of the role agent it waits for.
func (t TeamClient) Stop(ctx context.Context, team string) (*TeamRun, error) {
	return StopTeamRoute.Do(ctx, t.c, team, None{})
}

// Plan asks the daemon's planner for a workflow for a task (AutoAgents): roles, a
// numbered plan, checked by an observer and revised once.
func (t TeamClient) Plan(ctx context.Context, req TeamPlanRequest) (*TeamPlan, error) {
	return PlanTeamRoute.Do(ctx, t.c, "", req)
}

// Events streams a team run's transcript into fn: the entries after the one whose Seq
// is since (0: all of it), then each new one as it is written, until the run ends (the
// last event is the TurnEnd entry) or ctx does. A stream that ends without the end (the
// daemon stopped, the follower fell behind) returns nil: call again with the last Seq seen.
func (t TeamClient) Events(ctx context.Context, team string, since int, fn func(Event) error) error {
	return t.c.stream(ctx, TeamEventsRoute.URL(team, int64(since)), nil, fn)
}
