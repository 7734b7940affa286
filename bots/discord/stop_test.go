package discord

import (
	"context"
	"testing"
	"time"

	"github.com/agentd/agentd/bots"
	"github.com/agentd/agentd/internal/chattest"
	"github.com/agentd/agentd/internal/fakediscord"
	"github.com/agentd/agentd/internal/testutil"
)

// TestRunLeavesNoHandlers: when Run returns, every gateway handler the bot ran (a message,
// a slash command waiting on the relay) has ended.
func TestRunLeavesNoHandlers(t *testing.T) {
	fake := fakediscord.Start(t, fakediscord.Config{
		HeartbeatInterval: 200 * time.Millisecond,
		Guilds: []fakediscord.Guild{{ID: eGuild, Name: "home", Channels: []fakediscord.Channel{{ID: eChannel, Name: "agents"}},
			Members: []fakediscord.Member{{User: &uAlice}}}},
	})
	fake.Use(t)
	relay := chattest.NewSlow(time.Second) // a handler finishing after the gateway closed too
	bot, err := New(Options{Token: fake.Token(), Guilds: []string{eGuild}, Relay: relay,
		Watchdog: time.Second, Backoff: func(int) time.Duration { return 50 * time.Millisecond }})
	if err != nil {
		t.Fatal(err)
	}
	cancel, ran := relay.Start(bot.Run)
	defer cancel()
	testutil.Eventually(t, 10*time.Second, "the bot to connect and register /agent", func() bool {
		return bot.Status().State == bots.StateConnected && len(fake.Commands(eGuild)) == 1
	})
	sctx, done := context.WithTimeout(context.Background(), 10*time.Second)
	defer done()
	if err := fake.Settle(sctx); err != nil {
		t.Fatal(err)
	}
	if _, err := fake.Post(eChannel, uAlice, "hello"); err != nil {
		t.Fatal(err)
	}
	go fake.Command(eChannel, uAlice, "agent", fakediscord.CommandOption{Type: 1, Name: "list"})
	relay.CheckRunLeavesNoHandlers(t, 2, cancel, ran, "bots/discord.(*Bot).")
}
