package api

import "context"

// ScheduleClient reaches the daemon's schedules: c.Schedules().Add(ctx, req).
type ScheduleClient struct{ c *Client }

// Schedules returns the client for schedules, over c's transport.
func (c *Client) Schedules() ScheduleClient { return ScheduleClient{c} }

// List lists every schedule by name.
func (s ScheduleClient) List(ctx context.Context) ([]Schedule, error) {
	return SchedulesRoute.Do(ctx, s.c, "", None{})
}

// Add adds a schedule; the reply lists its next fire times.
func (s ScheduleClient) Add(ctx context.Context, req ScheduleRequest) (*Schedule, error) {
	return AddScheduleRoute.Do(ctx, s.c, "", req)
}

// Get returns one schedule (by id or name) with its status and next fire times.
func (s ScheduleClient) Get(ctx context.Context, schedule string) (*Schedule, error) {
	return ScheduleRoute.Do(ctx, s.c, schedule, None{})
}

// Remove removes a schedule and its run records; runs in progress go on.
func (s ScheduleClient) Remove(ctx context.Context, schedule string) error {
	_, err := RemoveScheduleRoute.Do(ctx, s.c, schedule, None{})
	return err
}

// Pause stops a schedule firing until Resume.
func (s ScheduleClient) Pause(ctx context.Context, schedule string) (*Schedule, error) {
	return PauseScheduleRoute.Do(ctx, s.c, schedule, None{})
}

// Resume lets a paused schedule fire again, from now on.
func (s ScheduleClient) Resume(ctx context.Context, schedule string) (*Schedule, error) {
	return ResumeScheduleRoute.Do(ctx, s.c, schedule, None{})
}

// Run fires a schedule now and returns the firing's record.
func (s ScheduleClient) Run(ctx context.Context, schedule string) (*ScheduleRun, error) {
	return RunScheduleRoute.Do(ctx, s.c, schedule, None{})
}

// History returns a schedule's firing records, newest first; limit 0 is all.
func (s ScheduleClient) History(ctx context.Context, schedule string, limit int) ([]ScheduleRun, error) {
	return ScheduleHistoryRoute.Do(ctx, s.c, schedule, ScheduleHistoryQuery{Limit: limit})
}

// SetWhen replaces a schedule's wake conditions; empty ones clear them.
func (s ScheduleClient) SetWhen(ctx context.Context, schedule string, when WakeConditions) (*Schedule, error) {
	return SetScheduleWhenRoute.Do(ctx, s.c, schedule, when)
}
