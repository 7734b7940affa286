package bots

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/testutil"
)

// flush waits until every post queued so far is done .
func (o *outbox) flush() {
	o.mu.Lock()
	defer o.mu.Unlock()
	for o.n > 0 {
		o.empty.Wait()
	}
}

// flaky is a platform that fails every post while down.
type flaky struct {
	mu    sync.Mutex
	down  bool
	got   []string
	tries int
	seen  chan struct{}
}

func (f *flaky) post(what string) func(context.Context) error {
	return func(context.Context) error {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.tries++
		defer func() {
			select {
			case f.seen <- struct{}{}:
			default:
			}
		}()
		if f.down {
			return errors.New("503 Service Unavailable")
		}
		f.got = append(f.got, what)
		return nil
	}
}

func (f *flaky) set(down bool) {
	f.mu.Lock()
	f.down = down
	f.mu.Unlock()
}

func (f *flaky) posted() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.got)
}

func TestOutboxRetriesInOrderPerThread(t *testing.T) {
	o := newOutbox(slog.New(slog.DiscardHandler), 100, time.Minute, func(int) time.Duration { return 5 * time.Millisecond })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	o.start(ctx)
	f := &flaky{down: true, seen: make(chan struct{}, 1)}
	for i := range 5 {
		o.add("slack/C1/t1", "post", f.post(fmt.Sprintf("t1-%d", i)))
	}
	o.add("slack/C1/t2", "post", f.post("t2-0"))
	// Down: the first post of each thread is tried again and again; nothing gets through.
	testutil.Eventually(t, 5*time.Second, "retries", func() bool { f.mu.Lock(); defer f.mu.Unlock(); return f.tries >= 6 })
	if got := f.posted(); len(got) != 0 {
		t.Fatalf("posted while down: %v", got)
	}
	f.set(false)
	testutil.Eventually(t, 5*time.Second, "the backlog", func() bool { return len(f.posted()) == 6 })
	var t1 []string
	for _, s := range f.posted() {
		if s != "t2-0" {
			t1 = append(t1, s)
		}
	}
	if !slices.Equal(t1, []string{"t1-0", "t1-1", "t1-2", "t1-3", "t1-4"}) {
		t.Errorf("thread t1 got %v, want its posts in order", t1)
	}
	cancel()
	o.wait()
	if o.n != 0 || len(o.queues) != 0 {
		t.Errorf("outbox not empty: n=%d queues=%d", o.n, len(o.queues))
	}
}

func TestOutboxPermanentErrorsAndBounds(t *testing.T) {
	o := newOutbox(slog.New(slog.DiscardHandler), 3, time.Minute, func(int) time.Duration { return time.Hour })
	ctx, cancel := context.WithCancel(context.Background())
	o.start(ctx)
	tries := 0
	var mu sync.Mutex
	done := make(chan struct{})
	o.add("k", "bad", func(context.Context) error {
		mu.Lock()
		tries++
		mu.Unlock()
		return Permanent(errors.New("400 Unknown Channel"))
	})
	o.add("k", "next", func(context.Context) error { close(done); return nil })
	<-done // a permanent error does not hold the thread up
	if tries != 1 {
		t.Errorf("a permanent error was tried %d times", tries)
	}
	// A platform down for good: the outbox holds 3 posts, no more.
	block := make(chan struct{})
	for i := range 5 {
		o.add("k2", fmt.Sprint(i), func(context.Context) error { <-block; return errors.New("down") })
	}
	o.mu.Lock()
	n := o.n
	o.mu.Unlock()
	if n != 3 {
		t.Errorf("queued = %d, want the bound 3", n)
	}
	// Shutting down stops the retries; Run's wait returns.
	close(block)
	cancel()
	o.wait()
}

func TestOutboxGivesUp(t *testing.T) {
	o := newOutbox(slog.New(slog.DiscardHandler), 10, 20*time.Millisecond, func(int) time.Duration { return 5 * time.Millisecond })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	o.start(ctx)
	done := make(chan struct{})
	o.add("k", "doomed", func(context.Context) error { return errors.New("down") })
	o.add("k", "after", func(context.Context) error { close(done); return nil })
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("a post failing past GiveUp held its thread forever")
	}
}

// TestPermanentStatus: a platform's refusal of the request itself (a 4xx) is not retried;
// rate limits (429) and its own failures (5xx) are.
func TestPermanentStatus(t *testing.T) {
	for _, c := range []struct {
		name      string
		code      int
		permanent bool
	}{
		{"bad_request", 400, true},
		{"forbidden", 403, true},
		{"not_found", 404, true},
		{"rate_limited", 429, false},
		{"server_error", 500, false},
		{"unavailable", 503, false},
		{"ok_status", 200, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := IsPermanent(PermanentStatus(errors.New("refused"), c.code)); got != c.permanent {
				t.Errorf("status %d: permanent = %v, want %v", c.code, got, c.permanent)
			}
		})
	}
}
