package slack

import (
	"context"
	"strings"
	"testing"

	"github.com/agentd/agentd/internal/fakeslack"
)

// TestRedeliveryAfterRestartAppliedOnce: Slack retries a mention it thinks was not
// acknowledged; when the retry reaches agentd after a restart, the relay still knows the
// mention started a run (the deliveries it handled are in the store), so it starts no
// second agent in the same thread.
func TestRedeliveryAfterRestartAppliedOnce(t *testing.T) {
	e := newEnv(t)
	e.Script(touch("a"))
	env, ts := e.slack.Mention(approver, channel, "", "touch once")
	e.wait("the run's first note", func(v fakeslack.View) bool { return hasText(v.Messages(channel, ts), "is on it") })
	e.proposal(ts, 1)

	e.restart()
	again := e.slack.Redeliver(env, "timeout")
	e.wait("the redelivery acked", func(v fakeslack.View) bool { return v.AckedInTime(again) })
	e.wait("the redelivery dropped", func(fakeslack.View) bool {
		return strings.Contains(e.Logs.String(), `dropped a redelivered message" platform=slack channel=`+channel+" id="+ts)
	})
	agents, err := e.Sup.API().Views.Agents(context.Background())
	if err != nil || len(agents) != 1 {
		t.Fatalf("agents = %d (%v), want the one the mention started", len(agents), err)
	}
	if n := strings.Count(e.Logs.String(), "run started from chat"); n != 1 {
		t.Errorf("%d runs started from chat, want 1", n)
	}
}
