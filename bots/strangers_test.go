package bots

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// TestNonApproverClicksAuditedOncePerMinute: a non-approver's forged clicks are refused
// before any other check and audited once per user per minute per platform, the rest
// counted; an approver's forged clicks are audited every time.
func TestNonApproverClicksAuditedOncePerMinute(t *testing.T) {
	hash := func(step int) string { return proposal("", "", step, "").Hash[:HashLen] }
	forged := Ref{AgentID: "a-2", ProposalID: "p-9", Hash: hash(9)} // another thread's agent
	for _, c := range []struct {
		name       string
		user       string
		clicks     int
		later      time.Duration // then one more click this much later
		wantAudits int
		wantReason string
		wantLast   int // Unaudited on the last row
	}{
		{"non_approver_flood", "U5", 500, 0, 1, "not an approver here", 0},
		{"non_approver_after_a_minute", "U5", 500, time.Minute, 2, "not an approver here", 499},
		{"non_approver_within_the_minute", "U5", 10, 59 * time.Second, 1, "not an approver here", 0},
		{"approver_forged_clicks", "U1", 20, 0, 20, "the button names another agent than its thread's", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := newBindingWorld(t)
			now := time.Date(2026, 11, 25, 1, 0, 0, 0, time.UTC)
			w.r.opt.Now = func() time.Time { return now }
			w.show(proposal("p-1", "a-1", 1, "read_file"))
			w.show(proposal("p-9", "a-2", 9, "delete_file"))
			press := func(i int) {
				w.r.OnClick(context.Background(), Click{Platform: "slack", Where: Where{Channel: "C1", Thread: "T1"}, User: User{ID: c.user},
					Action: ActionApprove, Ref: forged, ID: fmt.Sprint("c-", i)})
			}
			for i := range c.clicks {
				press(i)
			}
			if c.later > 0 {
				now = now.Add(c.later)
				press(c.clicks)
			}
			if decided, _ := w.svc.record(); len(decided) != 0 {
				t.Fatalf("forged clicks decided %q", decided)
			}
			w.mu.Lock()
			defer w.mu.Unlock()
			if len(w.audited) != c.wantAudits {
				t.Fatalf("%d audit rows, want %d", len(w.audited), c.wantAudits)
			}
			last := w.audited[len(w.audited)-1]
			if last.Reason != c.wantReason || last.Unaudited != c.wantLast || last.User != c.user {
				t.Errorf("last row = %+v, want reason %q, unaudited %d", last, c.wantReason, c.wantLast)
			}
		})
	}
}

// TestStrangerAuditsPerPlatformAndUser: the limit is per user and per platform.
func TestStrangerAuditsPerPlatformAndUser(t *testing.T) {
	var s strangerAudits
	now := time.Now()
	for _, c := range []struct {
		name, platform, user string
		want                 bool
	}{
		{"first_of_u5_on_slack", "slack", "U5", true},
		{"again_u5_on_slack", "slack", "U5", false},
		{"u5_on_discord", "discord", "U5", true},
		{"u6_on_slack", "slack", "U6", true},
	} {
		if _, got := s.allow(c.platform, c.user, now); got != c.want {
			t.Errorf("%s: audited %v, want %v", c.name, got, c.want)
		}
	}
}
