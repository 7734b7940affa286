package slack

import (
	"testing"
	"time"

	"github.com/agentd/agentd/bots"
	"github.com/agentd/agentd/internal/chattest"
	"github.com/agentd/agentd/internal/fakeslack"
)

// TestRunLeavesNoHandlers: when Run returns, every goroutine the bot started for an
// envelope (a mention, a click, a slash command whose ack waits on the relay) has ended.
func TestRunLeavesNoHandlers(t *testing.T) {
	fake := fakeslack.NewFake(t)
	relay := chattest.NewSlow(100 * time.Millisecond)
	bot, err := New(Options{BotToken: fake.BotToken, AppToken: fake.AppToken, APIURL: fake.APIURL(), Relay: relay,
		PingInterval: 2 * time.Second, Backoff: func(int) time.Duration { return 50 * time.Millisecond }})
	if err != nil {
		t.Fatal(err)
	}
	cancel, ran := relay.Start(bot.Run)
	defer cancel()
	if !fake.Wait(5*time.Second, func(v fakeslack.View) bool { return v.Connected() }) {
		t.Fatal("the bot never connected to the fake")
	}
	fake.Mention(approver, channel, "", "do a thing")
	fake.Slash(approver, channel, "/agent", "status")
	fake.Click(approver, channel, "", "1.0")(actionPrefix+bots.ActionApprove, "a-1 p-1 1")
	relay.CheckRunLeavesNoHandlers(t, 3, cancel, ran, "bots/slack.(*Bot).")
}
