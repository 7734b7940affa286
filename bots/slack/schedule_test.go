package slack

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/daemon/schedule"
	"github.com/agentd/agentd/daemon/schedule/wake"
	"github.com/agentd/agentd/internal/agenttest"
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

// /agent schedule when sets and clears a channel's schedule's wake conditions with
// agentctl's flags, for approvers only, refusing a path out of the workspace as
// agentctl's are refused; ls shows the conditions.
func TestSlashScheduleWhenSetsConditions(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	eng, err := wake.New(wake.Options{Store: e.St, Dir: filepath.Join(t.TempDir(), "wake")})
	if err != nil {
		t.Fatal(err)
	}
	m := schedule.New(schedule.Options{Store: e.St, Agents: agenttest.Of(e.Sup), Chat: e.Relay, Local: time.UTC, Wake: schedule.Wake{Engine: eng}})
	mctx, cancel := context.WithCancel(ctx)
	if err := m.Start(mctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Stop(); cancel(); m.Close() })
	e.Relay.SetSchedules(m)
	a, err := e.Sup.API().Runs.CreateAgent(ctx, api.CreateAgentRequest{Name: "keeper", Description: "keeps notes", Start: new(bool)})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(a.Workspace, "inbox"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := m.AddSchedule(ctx, api.ScheduleRequest{Name: "triage", Spec: "@hourly", Agent: "keeper", Goal: "triage the inbox",
		Delivery: "slack:" + channel}); err != nil {
		t.Fatal(err)
	}
	slash := func(user, text string) string { return e.answer(e.slack.Slash(user, channel, "/agent", text)) }
	// says checks that /agent text, typed by user, is answered with want.
	says := func(user, text, want, what string) {
		t.Helper()
		if got := slash(user, text); !strings.Contains(got, want) {
			t.Errorf("%s = %q, want %q in it", what, got, want)
		}
	}

	says(stranger, "schedule when triage --when-changed inbox", "not an approver", "a stranger's when")
	if got := slash(approver, "schedule when triage --when-changed ../other"); !strings.Contains(got, "--when-changed") || !strings.Contains(got, "..") {
		t.Errorf("a path out of the workspace = %q, want it refused naming the flag", got)
	}
	says(approver, "schedule when triage --when-any --when-all --when-changed inbox", "give one", "any and all")
	says(approver, "schedule when triage --when-changed inbox --when 'test -s inbox/new'", "execute_shell", "a check command without a shell")
	if s, _ := m.Schedule(ctx, "triage"); s.When != nil {
		t.Fatalf("refused edits set conditions: %+v", s.When)
	}
	says(approver, "schedule when triage --when-changed inbox --when-failed wake", "now wakes the model when --when-changed inbox --when-failed wake", "when")
	says(approver, "schedule ls", "wakes the model when --when-changed inbox", "ls")
	says(approver, "schedule when triage --when-none", "at every firing", "when-none")
	if s, _ := m.Schedule(ctx, "triage"); s.When != nil {
		t.Errorf("--when-none left %+v", s.When)
	}
}
