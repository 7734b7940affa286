package chattest

import (
	"strings"
	"testing"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/bots"
)

// A schedule delivers to PLATFORM:CHANNEL_ID, a channel the bot serves on a platform
// that is enabled; anything else is refused naming the problem. Fired from chat by an
// approver (/agent schedule run), its run gets a thread of its own: the goal is posted
// there, its proposals are decided there by a click and its end is posted there; a
// firing skipped meanwhile says why in the channel. /agent schedule ls and run are for
// approvers only.
func scheduledRunDeliveredToItsThread(t *testing.T, c Chat) {
	d := c.Daemon()
	m := d.Scheduler(0)
	d.Relay.SetSchedules(m)
	ctx := t.Context()
	here, other := c.Platform()+":"+c.Channel(), "discord"
	if c.Platform() == "discord" {
		other = "slack"
	}
	req := api.ScheduleRequest{Name: "digest", Spec: "0 9 * * *", Template: "digest", Goal: "touch the digest"}
	for _, tc := range []struct{ delivery, want string }{
		{c.Platform() + ":C9", "does not serve channel C9"},
		{other + ":C1", "no " + other + " bot is enabled"},
		{c.Platform() + ":", "PLATFORM:CHANNEL_ID"},
		{"email", "PLATFORM:CHANNEL_ID"},
		{here + " #foo", "PLATFORM:CHANNEL_ID"},
	} {
		req.Delivery = tc.delivery
		if _, err := m.AddSchedule(ctx, req); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("delivery %q: err = %v, want %q", tc.delivery, err, tc.want)
		}
	}
	req.Delivery = here
	if s, err := m.AddSchedule(ctx, req); err != nil || s.Delivery != here {
		t.Fatalf("add = %+v, %v", s, err)
	}

	for _, tc := range []struct {
		u          User
		text, want string
	}{
		{Stranger, "schedule run digest", "not an approver"},
		{Approver, "schedule run nope", `no schedule "nope"`},
		{Approver, "schedule ls", "digest `0 9 * * *` → " + here},
	} {
		if got := c.Command(tc.u, tc.text); !strings.Contains(got, tc.want) {
			t.Errorf("/agent %s = %q, want %q", tc.text, got, tc.want)
		}
	}
	if got := c.Command(Stranger, "schedule ls"); !strings.Contains(got, "not an approver") || strings.Contains(got, "digest") {
		t.Errorf("a stranger's /agent schedule ls = %q, want a refusal that shows no schedule", got)
	}

	d.Script(Touch("digest", speak))
	if got := c.Command(GroupApprover, "schedule run digest"); !strings.Contains(got, "its run started") {
		t.Fatalf("/agent schedule run digest = %q", got)
	}
	thread := c.Find("", "Scheduled run of digest").ID
	c.Wait("the goal in the thread", func() bool { return Has(c.Posted(thread), "Goal: touch the digest") })
	p := c.Proposal(thread, 1)
	if a := agentOf(c, thread); !strings.HasPrefix(a.Name, "digest-") {
		t.Errorf("thread bound to %s, want a digest- agent", a.Name)
	}

	// The run waits for a decision: the next firing is skipped, and says so.
	if skip, err := m.RunSchedule(ctx, "digest"); err != nil || skip.Outcome != "skipped" {
		t.Fatalf("second run = %+v, %v", skip, err)
	}
	c.Wait("the skip note", func() bool { return Has(c.Posted(""), "skipped its firing") })

	c.Click(Approver, thread, p, bots.ActionApprove)
	c.Decided(thread, p, c.Shown("Approved", Approver))
	c.Wait("the result", func() bool { return Has(c.Posted(thread), "touched digest") })
	c.Click(Approver, thread, c.Proposal(thread, 2), bots.ActionApprove)
	c.Wait("the run's end", func() bool { return Has(c.Posted(thread), "Scheduled run of digest finished after") })
	runs, err := m.ScheduleHistory(ctx, "digest", 0)
	if err != nil || len(runs) != 2 || runs[1].Outcome != "finished" || runs[0].Outcome != "skipped" {
		t.Errorf("history = %+v, %v", runs, err)
	}
}
