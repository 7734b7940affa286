package backoff

import (
	"context"
	"testing"
	"time"
)

// TestPolicyDoublesToItsCapWithJitter: waits double from Base to Max, attempts below 1
// count as the first, and jitter moves each wait by at most its fraction.
func TestPolicyDoublesToItsCapWithJitter(t *testing.T) {
	model := Policy{Base: time.Second, Max: 30 * time.Second, Jitter: 0.2}
	tests := []struct {
		name    string
		attempt int
		rand    float64
		want    time.Duration
	}{
		{"first_attempt", 1, 0.5, time.Second},
		{"zero_counts_as_first", 0, 0.5, time.Second},
		{"doubles", 3, 0.5, 4 * time.Second},
		{"capped", 6, 0.5, 30 * time.Second},
		{"huge_attempt_capped", 1 << 30, 0.5, 30 * time.Second},
		{"jitter_low", 2, 0, 1600 * time.Millisecond},
		{"jitter_high", 2, 1, 2400 * time.Millisecond},
		{"jitter_on_cap", 10, 0, 24 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := model
			p.Rand = func() float64 { return tt.rand }
			if got := p.Next(tt.attempt); got != tt.want {
				t.Errorf("Next(%d) = %v, want %v", tt.attempt, got, tt.want)
			}
		})
	}
	for i := 1; i < 20; i++ {
		if d := model.Next(i); d < 800*time.Millisecond || d > 36*time.Second {
			t.Errorf("Next(%d) = %v, out of range", i, d)
		}
	}
}

// TestPolicyWithoutJitterIsExact: the bots' reconnects and outbox, MCP restarts and
// agentctl's stream wait exactly Base·2^(n-1), capped.
func TestPolicyWithoutJitterIsExact(t *testing.T) {
	p := Policy{Base: time.Second, Max: 2 * time.Minute}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second,
		32 * time.Second, 64 * time.Second, 2 * time.Minute, 2 * time.Minute}
	for i, w := range want {
		if got := p.Next(i + 1); got != w {
			t.Errorf("Next(%d) = %v, want %v", i+1, got, w)
		}
	}
}

// TestSleepEndsWithItsContext: a wait of an hour ends as soon as its context does, and
// a short wait ends by itself.
func TestSleepEndsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); Sleep(ctx, time.Hour) }()
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Sleep went on after its context ended")
	}
	Sleep(context.Background(), time.Millisecond)
}

// TestSleepOrEndsEarlyWhenWokenOrDone: a wait of an hour ends, reporting true, as soon as
// its wake channel sends or its done channel closes, and reports false when its context
// ends first; a short wait reports true by itself.
func TestSleepOrEndsEarlyWhenWokenOrDone(t *testing.T) {
	wake, done := make(chan struct{}, 1), make(chan struct{})
	wake <- struct{}{}
	if !SleepOr(context.Background(), time.Hour, wake, nil) {
		t.Error("SleepOr woken = false, want true")
	}
	close(done)
	if !SleepOr(context.Background(), time.Hour, nil, done) {
		t.Error("SleepOr with done closed = false, want true")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if SleepOr(ctx, time.Hour, nil, nil) {
		t.Error("SleepOr with its context ended = true, want false")
	}
	if !Sleep(context.Background(), time.Millisecond) {
		t.Error("a short Sleep = false, want true")
	}
}
