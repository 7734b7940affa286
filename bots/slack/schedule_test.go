package slack

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/daemon/schedule"
	"github.com/agentd/agentd/internal/agenttest"
	"github.com/agentd/agentd/internal/fakeslack"
)

// scheduler runs the schedules' manager over e's supervisor, delivering through e's relay.
func (e *env) scheduler(keep int) *schedule.Manager {
	e.t.Helper()
	m := schedule.New(schedule.Options{Store: e.st, Agents: agenttest.Of(e.sup), Chat: e.relay, Local: time.UTC, KeepAgents: keep})
	f := m.RunEnded
	e.runEnded.Store(&f)
	ctx, cancel := context.WithCancel(context.Background())
	if err := m.Start(ctx); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { m.Stop(); cancel() })
	return m
}

// runThread waits for the root message of schedule name's next run and returns it.
func (e *env) runThread(name string, n int) string {
	e.t.Helper()
	var ts string
	e.wait("the scheduled run's thread", func(v fakeslack.View) bool {
		seen := 0
		for _, m := range v.Messages(channel, "") {
			if strings.Contains(m.Text, "Scheduled run of "+name) || strings.Contains(string(m.Blocks), "Scheduled run of "+name+",") {
				if seen++; seen == n {
					ts = m.TS
					return true
				}
			}
		}
		return false
	})
	return ts
}

func TestScheduleDeliveryChecked(t *testing.T) {
	e := newEnv(t)
	m := e.scheduler(0)
	req := api.ScheduleRequest{Name: "digest", Spec: "@daily", Template: "digest", Goal: "touch the digest"}
	for delivery, want := range map[string]string{
		"slack:C9":      "does not serve channel C9",
		"discord:C1":    "no discord bot is enabled",
		"slack:":        "PLATFORM:CHANNEL_ID",
		"email":         "PLATFORM:CHANNEL_ID",
		"slack:C1 #foo": "PLATFORM:CHANNEL_ID",
	} {
		req.Delivery = delivery
		_, err := m.AddSchedule(context.Background(), req)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("delivery %q: err = %v, want %q", delivery, err, want)
		}
	}
	req.Delivery = "slack:" + channel
	s, err := m.AddSchedule(context.Background(), req)
	if err != nil || s.Delivery != "slack:"+channel {
		t.Fatalf("add = %+v, %v", s, err)
	}
}

// A scheduled run gets its own thread; its proposal is decided there by a click, and its
// end is posted there. A firing skipped meanwhile says why in the channel.
func TestScheduledRunDeliveredToThread(t *testing.T) {
	e := newEnv(t)
	m := e.scheduler(0)
	ctx := context.Background()
	if _, err := m.AddSchedule(ctx, api.ScheduleRequest{Name: "digest", Spec: "0 9 * * *", Template: "digest",
		Goal: "touch the digest", Delivery: "slack:" + channel}); err != nil {
		t.Fatal(err)
	}
	e.script(reply("bots_test_touch", map[string]string{"what": "digest"}))
	rec, err := m.RunSchedule(ctx, "digest")
	if err != nil || rec.RunID == "" {
		t.Fatalf("run-now = %+v, %v", rec, err)
	}
	thread := e.runThread("digest", 1)
	e.wait("the goal in the thread", func(v fakeslack.View) bool { return hasText(v.Messages(channel, thread), "Goal: touch the digest") })
	p := e.proposal(thread, 1)
	if a := e.agentOf(thread); a.RunID != rec.RunID || !strings.HasPrefix(a.Name, "digest-") {
		t.Errorf("thread bound to %s run %s, want a digest- agent in run %s", a.Name, a.RunID, rec.RunID)
	}

	// The run waits for a decision: the next firing is skipped, and says so.
	if skip, err := m.RunSchedule(ctx, "digest"); err != nil || skip.Outcome != "skipped" {
		t.Fatalf("second run-now = %+v, %v", skip, err)
	}
	e.wait("the skip note", func(v fakeslack.View) bool { return hasText(v.Messages(channel, ""), "skipped its firing") })

	e.click(approver, thread, p, "approve")
	e.decided(thread, p.TS, "Approved* by")
	e.wait("the result", func(v fakeslack.View) bool { return hasText(v.Messages(channel, thread), "touched digest") })
	fin := e.proposal(thread, 2)
	e.click(approver, thread, fin, "approve")
	e.wait("the run's end", func(v fakeslack.View) bool {
		return hasText(v.Messages(channel, thread), "Scheduled run of digest finished after")
	})
	runs, err := m.ScheduleHistory(ctx, "digest", 0)
	if err != nil || len(runs) != 2 || runs[1].Outcome != "finished" || runs[0].Outcome != "skipped" {
		t.Errorf("history = %+v, %v", runs, err)
	}
}

// A run that cannot start says why in the channel.
func TestScheduledRunFailurePosted(t *testing.T) {
	e := newEnv(t)
	m := e.scheduler(0)
	ctx := context.Background()
	a, err := e.sup.API().Runs.CreateAgent(ctx, api.CreateAgentRequest{Name: "ops", Description: "ops", Goals: []string{"x"}, Start: new(bool)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.AddSchedule(ctx, api.ScheduleRequest{Name: "backup", Spec: "@daily", Agent: a.Name,
		Goal: "check the backup", Delivery: "slack:" + channel}); err != nil {
		t.Fatal(err)
	}
	if err := e.sup.API().Runs.DeleteAgent(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	if rec, err := m.RunSchedule(ctx, "backup"); err != nil || rec.Outcome != "failed" {
		t.Fatalf("run-now = %+v, %v", rec, err)
	}
	e.wait("the failure note", func(v fakeslack.View) bool {
		return hasText(v.Messages(channel, ""), "could not start its run") && hasText(v.Messages(channel, ""), "no longer exists")
	})
}

func TestSlashScheduleCommands(t *testing.T) {
	e := newEnv(t)
	m := e.scheduler(0)
	if got := e.answer(e.slack.Slash(approver, channel, "/agent", "schedule ls")); !strings.Contains(got, "Schedules are not available") {
		t.Errorf("ls without schedules = %q", got)
	}
	e.relay.SetSchedules(m)
	if got := e.answer(e.slack.Slash(approver, channel, "/agent", "schedule ls")); !strings.Contains(got, "No schedules") {
		t.Errorf("ls = %q", got)
	}
	if _, err := m.AddSchedule(context.Background(), api.ScheduleRequest{Name: "digest", Spec: "0 9 * * *", Template: "digest",
		Goal: "touch the digest", Delivery: "slack:" + channel}); err != nil {
		t.Fatal(err)
	}
	if got := e.answer(e.slack.Slash(approver, channel, "/agent", "schedule ls")); !strings.Contains(got, "digest `0 9 * * *` → slack:"+channel) {
		t.Errorf("ls = %q", got)
	}
	if got := e.answer(e.slack.Slash(stranger, channel, "/agent", "schedule run digest")); !strings.Contains(got, "not an approver") {
		t.Errorf("stranger's run = %q", got)
	}
	if got := e.answer(e.slack.Slash(approver, channel, "/agent", "schedule run nope")); !strings.Contains(got, `no schedule "nope"`) {
		t.Errorf("run of an unknown schedule = %q", got)
	}
	e.script(reply("bots_test_touch", map[string]string{"what": "digest"}))
	if got := e.answer(e.slack.Slash(approver, channel, "/agent", "schedule run digest")); !strings.Contains(got, "its run started") {
		t.Errorf("run = %q", got)
	}
	e.proposal(e.runThread("digest", 1), 1)
}
