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
)

// /agent schedule when sets and clears a channel's schedule's wake conditions with
// agentctl's flags, for approvers only, refusing a path out of the workspace as
// agentctl's are refused; ls shows the conditions.
func TestSlashScheduleWhenSetsConditions(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	eng, err := wake.New(wake.Options{Store: e.st, Dir: filepath.Join(t.TempDir(), "wake")})
	if err != nil {
		t.Fatal(err)
	}
	m := schedule.New(schedule.Options{Store: e.st, Agents: agenttest.Of(e.sup), Chat: e.relay, Local: time.UTC, Wake: schedule.Wake{Engine: eng}})
	mctx, cancel := context.WithCancel(ctx)
	if err := m.Start(mctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Stop(); cancel(); m.Close() })
	e.relay.SetSchedules(m)
	a, err := e.sup.API().Runs.CreateAgent(ctx, api.CreateAgentRequest{Name: "keeper", Description: "keeps notes", Start: new(bool)})
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

	if got := slash(stranger, "schedule when triage --when-changed inbox"); !strings.Contains(got, "not an approver") {
		t.Errorf("a stranger's when = %q", got)
	}
	if got := slash(approver, "schedule when triage --when-changed ../other"); !strings.Contains(got, "--when-changed") || !strings.Contains(got, "..") {
		t.Errorf("a path out of the workspace = %q, want it refused naming the flag", got)
	}
	if got := slash(approver, "schedule when triage --when-any --when-all --when-changed inbox"); !strings.Contains(got, "give one") {
		t.Errorf("any and all = %q", got)
	}
	if got := slash(approver, "schedule when triage --when-changed inbox --when 'test -s inbox/new'"); !strings.Contains(got, "execute_shell") {
		t.Errorf("a check command without a shell = %q, want the fix", got)
	}
	if s, _ := m.Schedule(ctx, "triage"); s.When != nil {
		t.Fatalf("refused edits set conditions: %+v", s.When)
	}
	if got := slash(approver, "schedule when triage --when-changed inbox --when-failed wake"); !strings.Contains(got, "now wakes the model when --when-changed inbox --when-failed wake") {
		t.Errorf("when = %q", got)
	}
	if got := slash(approver, "schedule ls"); !strings.Contains(got, "wakes the model when --when-changed inbox") {
		t.Errorf("ls = %q", got)
	}
	if got := slash(approver, "schedule when triage --when-none"); !strings.Contains(got, "at every firing") {
		t.Errorf("when-none = %q", got)
	}
	if s, _ := m.Schedule(ctx, "triage"); s.When != nil {
		t.Errorf("--when-none left %+v", s.When)
	}
}
