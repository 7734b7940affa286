package discord

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/daemon/schedule"
	"github.com/agentd/agentd/internal/agenttest"
	"github.com/agentd/agentd/internal/fakediscord"
)

// scheduler runs the schedules' manager over e's supervisor, delivering through e's relay.
func (e *env) scheduler() *schedule.Manager {
	e.t.Helper()
	m := schedule.New(schedule.Options{Store: e.st, Agents: agenttest.Of(e.sup), Chat: e.relay, Local: time.UTC})
	f := m.RunEnded
	e.runEnded.Store(&f)
	ctx, cancel := context.WithCancel(context.Background())
	if err := m.Start(ctx); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { m.Stop(); cancel() })
	return m
}

func TestScheduleDeliveryToDiscord(t *testing.T) {
	e := newEnv(t)
	m := e.scheduler()
	e.relay.SetSchedules(m)
	ctx := context.Background()
	req := api.ScheduleRequest{Name: "digest", Spec: "0 9 * * *", Template: "digest", Goal: "touch the digest"}
	for delivery, want := range map[string]string{
		"discord:" + eOther: "does not serve channel " + eOther,
		"slack:C1":          "no slack bot is enabled",
		"discord:":          "PLATFORM:CHANNEL_ID",
	} {
		req.Delivery = delivery
		if _, err := m.AddSchedule(ctx, req); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("delivery %q: err = %v, want %q", delivery, err, want)
		}
	}
	req.Delivery = "discord:" + eChannel
	if s, err := m.AddSchedule(ctx, req); err != nil || s.Delivery != "discord:"+eChannel {
		t.Fatalf("add = %+v, %v", s, err)
	}

	// Fired from Discord itself: /agent schedule run digest.
	e.script(reply("bots_test_touch", map[string]string{"what": "digest"}))
	in, err := e.fake.Command(eChannel, uCarol, "agent", fakediscord.CommandOption{Type: 1, Name: "schedule",
		Options: []fakediscord.CommandOption{{Type: 3, Name: "action", Value: "run"}, {Type: 3, Name: "name", Value: "digest"}}})
	if err != nil {
		t.Fatal(err)
	}
	e.wait("the answer", func() bool { return e.original(in, "its run started") })

	// The run's thread hangs off a root message in the channel.
	var thread string
	e.wait("the scheduled run's thread", func() bool {
		for _, m := range e.fake.Messages(eChannel) {
			if strings.Contains(m.Content, "Scheduled run of digest") {
				if ch, ok := e.fake.Channel(m.ID); ok && ch.ParentID == eChannel {
					thread = m.ID
					return true
				}
			}
		}
		return false
	})
	e.wait("the goal in the thread", func() bool { return hasText(e.fake.Messages(thread), "Goal: touch the digest") })
	p := e.proposal(thread, 1)
	e.click(uAlice, thread, p, ActionApprove)
	e.decided(p.ID, "Approved** by <@"+uAlice.ID+">")
	e.wait("the result", func() bool { return hasText(e.fake.Messages(thread), "touched digest") })
	fin := e.proposal(thread, 2)
	e.click(uAlice, thread, fin, ActionApprove)
	e.wait("the run's end", func() bool { return hasText(e.fake.Messages(thread), "Scheduled run of digest finished after") })

	ls, err := e.fake.Command(eChannel, uAlice, "agent", fakediscord.CommandOption{Type: 1, Name: "schedule",
		Options: []fakediscord.CommandOption{{Type: 3, Name: "action", Value: "ls"}}})
	if err != nil {
		t.Fatal(err)
	}
	e.wait("the list", func() bool { return e.original(ls, "digest `0 9 * * *` → discord:"+eChannel) })
	bls, err := e.fake.Command(eChannel, uBob, "agent", fakediscord.CommandOption{Type: 1, Name: "schedule",
		Options: []fakediscord.CommandOption{{Type: 3, Name: "action", Value: "ls"}}})
	if err != nil {
		t.Fatal(err)
	}
	e.wait("bob's schedule list refused", func() bool { return e.original(bls, "not an approver") })
	if e.original(bls, "digest") {
		t.Error("a non-approver's /agent schedule ls showed a schedule")
	}
}
