package testutil

import (
	"slices"
	"sync"
	"time"
)

// Clock is a fake clock whose time moves only when the test calls Set; the timers due by
// then fire as a real timer's channel would. A package whose clock interface returns its
// own Timer type wraps it in one line: `func (c fake) NewTimer(d) Timer { return c.Timer(d) }`.
type Clock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*Timer
}

// Timer is a timer of a Clock: it sends on C once the clock is set to or past its time.
type Timer struct {
	clk *Clock
	at  time.Time
	c   chan time.Time
}

// NewClock returns a Clock that reads now until it is set.
func NewClock(now time.Time) *Clock { return &Clock{now: now} }

// Now is the time the clock was last set to.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Timer returns a timer that fires once the clock has moved d on; d ≤ 0 fires at once.
func (c *Clock) Timer(d time.Duration) *Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &Timer{clk: c, at: c.now.Add(d), c: make(chan time.Time, 1)}
	if d <= 0 {
		t.c <- c.now
	} else {
		c.timers = append(c.timers, t)
	}
	return t
}

// Set moves the clock to now and fires the timers due by then.
func (c *Clock) Set(now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = now
	c.timers = slices.DeleteFunc(c.timers, func(t *Timer) bool {
		if t.at.After(now) {
			return false
		}
		t.c <- now
		return true
	})
}

// C is the channel the timer fires on.
func (t *Timer) C() <-chan time.Time { return t.c }

// Stop keeps the timer from firing and reports whether it was still waiting.
func (t *Timer) Stop() bool {
	t.clk.mu.Lock()
	defer t.clk.mu.Unlock()
	n := len(t.clk.timers)
	t.clk.timers = slices.DeleteFunc(t.clk.timers, func(x *Timer) bool { return x == t })
	return len(t.clk.timers) < n
}
