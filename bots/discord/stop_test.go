package discord

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/bots"
	"github.com/agentd/agentd/internal/fakediscord"
	"github.com/agentd/agentd/internal/testutil"
)

// slowRelay holds every call until its context ends, then a little longer, and counts the
// calls still inside.
type slowRelay struct {
	mu      sync.Mutex
	inside  int
	entered chan struct{}
}

func (s *slowRelay) hold(ctx context.Context) {
	s.mu.Lock()
	s.inside++
	s.mu.Unlock()
	s.entered <- struct{}{}
	<-ctx.Done()
	time.Sleep(time.Second) // a handler finishing its work after the stop (and the gateway's close)
	s.mu.Lock()
	s.inside--
	s.mu.Unlock()
}

func (s *slowRelay) OnMessage(ctx context.Context, _ bots.Incoming) { s.hold(ctx) }
func (s *slowRelay) OnClick(ctx context.Context, _ bots.Click)      { s.hold(ctx) }
func (s *slowRelay) OnFeedback(ctx context.Context, _ string, _ bots.Where, _ bots.User, _ bots.Ref, _ string) {
	s.hold(ctx)
}
func (s *slowRelay) OnCommand(ctx context.Context, _ string, _ bots.Where, _ bots.User, _ string) string {
	s.hold(ctx)
	return "late"
}

// TestRunLeavesNoHandlers: when Run returns, every gateway handler the bot ran (a message,
// a slash command waiting on the relay) has ended.
func TestRunLeavesNoHandlers(t *testing.T) {
	fake := fakediscord.Start(t, fakediscord.Config{
		HeartbeatInterval: 200 * time.Millisecond,
		Guilds: []fakediscord.Guild{{ID: eGuild, Name: "home", Channels: []fakediscord.Channel{{ID: eChannel, Name: "agents"}},
			Members: []fakediscord.Member{{User: &uAlice}}}},
	})
	fake.Use(t)
	relay := &slowRelay{entered: make(chan struct{}, 8)}
	bot, err := New(Options{Token: fake.Token(), Guilds: []string{eGuild}, Relay: relay,
		Watchdog: time.Second, Backoff: func(int) time.Duration { return 50 * time.Millisecond }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ran := make(chan struct{})
	go func() { defer close(ran); bot.Run(ctx) }()
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
	for range 2 {
		select {
		case <-relay.entered:
		case <-time.After(5 * time.Second):
			t.Fatal("the relay never saw the message and the command")
		}
	}
	cancel()
	select {
	case <-ran:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
	relay.mu.Lock()
	inside := relay.inside
	relay.mu.Unlock()
	if inside != 0 {
		t.Errorf("Run returned with %d relay calls still running", inside)
	}
	if left := botGoroutines(); left != "" {
		t.Errorf("goroutines of the bot left after Run returned:\n%s", left)
	}
}

// botGoroutines returns the stacks of goroutines running a method of Bot.
func botGoroutines() string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "bots/discord.(*Bot).") {
			out = append(out, g)
		}
	}
	return strings.Join(out, "\n\n")
}
