package slack

import (
	"context"
	"strings"
	"testing"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/internal/fakeslack"
)

// A run that cannot start says why in the channel.
func TestScheduledRunFailurePosted(t *testing.T) {
	e := newEnv(t)
	m := e.Scheduler(0)
	ctx := context.Background()
	a, err := e.Sup.API().Runs.CreateAgent(ctx, api.CreateAgentRequest{Name: "ops", Description: "ops", Goals: []string{"x"}, Start: new(bool)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.AddSchedule(ctx, api.ScheduleRequest{Name: "backup", Spec: "@daily", Agent: a.Name,
		Goal: "check the backup", Delivery: "slack:" + channel}); err != nil {
		t.Fatal(err)
	}
	if err := e.Sup.API().Runs.DeleteAgent(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	if rec, err := m.RunSchedule(ctx, "backup"); err != nil || rec.Outcome != "failed" {
		t.Fatalf("run-now = %+v, %v", rec, err)
	}
	e.wait("the failure note", func(v fakeslack.View) bool {
		return hasText(v.Messages(channel, ""), "could not start its run") && hasText(v.Messages(channel, ""), "no longer exists")
	})
}

// TestSlashScheduleCommands: /agent schedule says when the daemon has no schedules, and
// when none is set. (The rest of /agent schedule is the scheduled_run scenario.)
func TestSlashScheduleCommands(t *testing.T) {
	e := newEnv(t)
	m := e.Scheduler(0)
	if got := e.answer(e.slack.Slash(approver, channel, "/agent", "schedule ls")); !strings.Contains(got, "Schedules are not available") {
		t.Errorf("ls without schedules = %q", got)
	}
	e.Relay.SetSchedules(m)
	if got := e.answer(e.slack.Slash(approver, channel, "/agent", "schedule ls")); !strings.Contains(got, "No schedules") {
		t.Errorf("ls = %q", got)
	}
}
