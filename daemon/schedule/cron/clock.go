package cron

import "time"

// Clock is the Scheduler's source of time; tests drive a fake one.
type Clock interface {
	Now() time.Time
	// NewTimer returns a timer that sends on C once d has passed.
	NewTimer(d time.Duration) Timer
}

// Timer is the part of *time.Timer the Scheduler uses.
type Timer interface {
	C() <-chan time.Time
	Stop() bool
}

// SystemClock is the real clock.
type SystemClock struct{}

func (SystemClock) Now() time.Time { return time.Now() }

func (SystemClock) NewTimer(d time.Duration) Timer { return systemTimer{time.NewTimer(d)} }

type systemTimer struct{ t *time.Timer }

func (t systemTimer) C() <-chan time.Time { return t.t.C }
func (t systemTimer) Stop() bool          { return t.t.Stop() }
