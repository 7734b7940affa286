package testutil

import (
	"testing"
	"time"
)

// Polls start every firstPoll and back off to every lastPoll: a condition that comes
// true at once is seen at once, and a long wait does not hammer the daemon it polls.
const (
	firstPoll = 2 * time.Millisecond
	lastPoll  = 25 * time.Millisecond
)

// poller sleeps between polls, backing off.
type poller struct{ every time.Duration }

func (p *poller) sleep() {
	if p.every == 0 {
		p.every = firstPoll
	}
	time.Sleep(p.every)
	p.every = min(2*p.every, lastPoll)
}

// Wait calls cond until it returns true or timeout has passed, and reports whether it
// did. cond is checked once more at the deadline, so a slow machine gets the full timeout.
// Use it where the caller writes its own failure message from the state at the time.
func Wait(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	var p poller
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		p.sleep()
	}
}

// Hold calls cond until window has passed and reports whether it held all along,
// returning false as soon as it does not. It checks that something does not happen
// (a refused click changes nothing, an unserved channel gets no reply): the caller then
// asserts on the state it last saw, so a violation fails at once instead of after a sleep.
func Hold(window time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(window)
	var p poller
	for {
		if !cond() {
			return false
		}
		if time.Now().After(deadline) {
			return true
		}
		p.sleep()
	}
}

// Eventually waits until cond returns true and fails the test, naming what it waited
// for, if it has not within timeout. Call it from the test's own goroutine.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	if !Wait(timeout, cond) {
		t.Fatalf("timed out after %v waiting for %s", timeout, what)
	}
}
