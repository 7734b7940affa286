package chattest

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/bots"
)

// HandledRelay tells of each message the relay before it has finished handling.
type HandledRelay struct {
	bots.Handler
	done chan bots.Incoming
}

// NewHandled is a HandledRelay; set its Handler before the bot hands it anything.
func NewHandled() *HandledRelay { return &HandledRelay{done: make(chan bots.Incoming, 1024)} }

// OnMessage hands the message on and tells of it once handled. A test that never asks
// (a scenario without edits) does not hold the bot up: past the buffer, it is not told.
func (h *HandledRelay) OnMessage(ctx context.Context, in bots.Incoming) {
	h.Handler.OnMessage(ctx, in)
	select {
	case h.done <- in:
	default:
	}
}

// Handled waits until the relay has handled the message (or edit) with id.
func (h *HandledRelay) Handled(t testing.TB, id string, edited bool) {
	t.Helper()
	for {
		select {
		case in := <-h.done:
			if in.ID == id && in.Edited == edited {
				return
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("the relay never handled message %s (edited: %v)", id, edited)
		}
	}
}

// SlowRelay holds every call until its context ends, then After longer (a handler
// finishing its work after the stop), and counts the calls still inside.
type SlowRelay struct {
	After   time.Duration
	Entered chan struct{}

	mu     sync.Mutex
	inside int
}

// NewSlow is a SlowRelay that takes after to finish.
func NewSlow(after time.Duration) *SlowRelay {
	return &SlowRelay{After: after, Entered: make(chan struct{}, 8)}
}

func (s *SlowRelay) hold(ctx context.Context) {
	s.mu.Lock()
	s.inside++
	s.mu.Unlock()
	s.Entered <- struct{}{}
	<-ctx.Done()
	time.Sleep(s.After) // the work a handler does after the stop: what Run must wait for
	s.mu.Lock()
	s.inside--
	s.mu.Unlock()
}

func (s *SlowRelay) OnMessage(ctx context.Context, _ bots.Incoming) { s.hold(ctx) }
func (s *SlowRelay) OnClick(ctx context.Context, _ bots.Click)      { s.hold(ctx) }
func (s *SlowRelay) OnFeedback(ctx context.Context, _ string, _ bots.Where, _ bots.User, _ bots.Ref, _ string) {
	s.hold(ctx)
}
func (s *SlowRelay) OnCommand(ctx context.Context, _ string, _ bots.Where, _ bots.User, _ string) string {
	s.hold(ctx)
	return "late"
}

// CheckRunLeavesNoHandlers waits until n calls are inside s, ends the bot's context with
// cancel, and checks that Run (closing ran) returned with no call inside and no
// goroutine left running a method of the bot (named by its stack frame prefix, such as
// "bots/slack.(*Bot).").
func (s *SlowRelay) CheckRunLeavesNoHandlers(t testing.TB, n int, cancel context.CancelFunc, ran <-chan struct{}, frame string) {
	t.Helper()
	for range n {
		select {
		case <-s.Entered:
		case <-time.After(5 * time.Second):
			t.Fatal("the relay never saw what the bot was sent")
		}
	}
	cancel()
	select {
	case <-ran:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
	s.mu.Lock()
	inside := s.inside
	s.mu.Unlock()
	if inside != 0 {
		t.Errorf("Run returned with %d relay calls still running", inside)
	}
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var left []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, frame) {
			left = append(left, g)
		}
	}
	if len(left) > 0 {
		t.Errorf("goroutines of the bot left after Run returned:\n%s", strings.Join(left, "\n\n"))
	}
}

// HoldingRelay hands the relay before it a message whose text has the words Hold was
// given only once released: a platform delivering it late, after what the test does
// meanwhile. Other messages, and all of them before Hold, pass straight on.
type HoldingRelay struct {
	bots.Handler

	mu      sync.Mutex
	hold    string
	release chan struct{}
}

// Hold holds messages with text in them until release is called (once or more).
func (h *HoldingRelay) Hold(text string) (release func()) {
	ch := make(chan struct{})
	h.mu.Lock()
	h.hold, h.release = text, ch
	h.mu.Unlock()
	var once sync.Once
	return func() { once.Do(func() { close(ch) }) }
}

// OnMessage hands the message on, once released if it is held.
func (h *HoldingRelay) OnMessage(ctx context.Context, in bots.Incoming) {
	h.mu.Lock()
	hold, release := h.hold, h.release
	h.mu.Unlock()
	if hold != "" && strings.Contains(in.Text, hold) {
		<-release
	}
	h.Handler.OnMessage(ctx, in)
}
