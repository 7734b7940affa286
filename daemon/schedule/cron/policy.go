package cron

import (
	"cmp"
	"fmt"
	"strings"
	"time"
)

// Concurrency says what a firing does while the schedule's previous run is still going.
type Concurrency string

const (
	// ConcurrencySkip (the default, also "") records the firing as skipped.
	ConcurrencySkip Concurrency = "skip"
	// ConcurrencyQueue starts the firing when the running run ends. At most one firing
	// waits: a later one, while one is queued, is skipped, so a slow run never builds a
	// backlog of identical runs.
	ConcurrencyQueue Concurrency = "queue"
	// ConcurrencyParallel starts the firing at once, next to the running ones.
	ConcurrencyParallel Concurrency = "parallel"
)

// ParseConcurrency reads "skip", "queue" or "parallel"; "" means skip.
func ParseConcurrency(s string) (Concurrency, error) {
	switch c := Concurrency(s); c {
	case "", ConcurrencySkip:
		return ConcurrencySkip, nil
	case ConcurrencyQueue, ConcurrencyParallel:
		return c, nil
	}
	return "", fmt.Errorf("unknown concurrency policy %q: use skip, queue or parallel", s)
}

// MissedMode says what happens to firings that passed while the daemon was not running
// (or the machine slept).
type MissedMode string

const (
	// MissedSkip (the default, also "") records them as missed and runs none.
	MissedSkip MissedMode = "skip"
	// MissedRunOnce makes one run for the lot (for the latest); the rest are missed.
	MissedRunOnce MissedMode = "run_once"
	// MissedRunIfWithin is MissedRunOnce if the latest missed firing is at most Window
	// old, else MissedSkip.
	MissedRunIfWithin MissedMode = "run_if_within"
)

// MissedPolicy is a MissedMode and, for run_if_within, its window.
type MissedPolicy struct {
	Mode   MissedMode
	Window time.Duration // run_if_within only
}

// ParseMissedPolicy reads "skip", "run_once" or "run_if_within=2h" (also
// "run_if_within(2h)"); "" means skip.
func ParseMissedPolicy(s string) (MissedPolicy, error) {
	mode, arg, hasArg := strings.Cut(s, "=")
	if m, a, ok := strings.Cut(s, "("); ok && strings.HasSuffix(a, ")") {
		mode, arg, hasArg = m, strings.TrimSuffix(a, ")"), true
	}
	p := MissedPolicy{Mode: cmp.Or(MissedMode(mode), MissedSkip)}
	if err := (MissedPolicy{Mode: p.Mode, Window: 1}).validate(); err != nil {
		return MissedPolicy{}, err
	}
	if p.Mode == MissedRunIfWithin && hasArg {
		d, err := time.ParseDuration(arg)
		if err != nil {
			return MissedPolicy{}, fmt.Errorf("missed-run policy %q: %q is not a duration such as 2h", s, arg)
		}
		p.Window = d
	} else if hasArg {
		return MissedPolicy{}, fmt.Errorf("missed-run policy %q: only run_if_within takes a window", s)
	}
	return p, p.validate()
}

func (p MissedPolicy) validate() error {
	switch p.Mode {
	case "", MissedSkip, MissedRunOnce:
		return nil
	case MissedRunIfWithin:
		if p.Window <= 0 {
			return fmt.Errorf("missed-run policy run_if_within needs a positive window, e.g. run_if_within=2h")
		}
		return nil
	}
	return fmt.Errorf("unknown missed-run policy %q: use skip, run_once or run_if_within=<duration>", p.Mode)
}

// String returns the form ParseMissedPolicy reads.
func (p MissedPolicy) String() string {
	switch p.Mode {
	case "":
		return string(MissedSkip)
	case MissedRunIfWithin:
		return fmt.Sprintf("%s=%v", p.Mode, p.Window)
	}
	return string(p.Mode)
}
