package testutil

import (
	"testing"
	"time"
)

// pollEvery is how often Wait checks its condition: short next to the waits it
// replaces, long enough that a poll loop does not starve the code under test.
const pollEvery = 5 * time.Millisecond

// Wait calls cond until it returns true or timeout has passed, and reports whether it
// did. cond is checked once more at the deadline, so a slow machine gets the full timeout.
// Use it where the caller writes its own failure message from the state at the time.
func Wait(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(pollEvery)
	}
}

// Hold calls cond until window has passed and reports whether it held all along,
// returning false as soon as it does not. It checks that something does not happen
// (a refused click changes nothing, an unserved channel gets no reply): the caller then
// asserts on the state it last saw, so a violation fails at once instead of after a sleep.
func Hold(window time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(window)
	for {
		if !cond() {
			return false
		}
		if time.Now().After(deadline) {
			return true
		}
		time.Sleep(pollEvery)
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
