package slack

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/bots"
	"github.com/agentd/agentd/internal/fakeslack"
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
	time.Sleep(100 * time.Millisecond) // a handler finishing its work after the stop
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

// TestRunLeavesNoHandlers: when Run returns, every goroutine the bot started for an
// envelope (a mention, a click, a slash command whose ack waits on the relay) has ended.
func TestRunLeavesNoHandlers(t *testing.T) {
	fake := fakeslack.NewFake(t)
	relay := &slowRelay{entered: make(chan struct{}, 8)}
	bot, err := New(Options{BotToken: fake.BotToken, AppToken: fake.AppToken, APIURL: fake.APIURL(), Relay: relay,
		PingInterval: 2 * time.Second, Backoff: func(int) time.Duration { return 50 * time.Millisecond }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ran := make(chan struct{})
	go func() { defer close(ran); bot.Run(ctx) }()
	if !fake.Wait(5*time.Second, func(v fakeslack.View) bool { return v.Connected() }) {
		t.Fatal("the bot never connected to the fake")
	}
	fake.Mention(approver, channel, "", "do a thing")
	fake.Slash(approver, channel, "/agent", "status")
	fake.Click(approver, channel, "", "1.0")(actionPrefix+bots.ActionApprove, "a-1 p-1 1")
	for range 3 {
		select {
		case <-relay.entered:
		case <-time.After(5 * time.Second):
			t.Fatal("the relay never saw the envelopes")
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
		if strings.Contains(g, "bots/slack.(*Bot).") {
			out = append(out, g)
		}
	}
	return strings.Join(out, "\n\n")
}
