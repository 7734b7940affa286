package cron

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"time"

	"github.com/agentd/agentd/api"
)

// maxMissedRecords bounds the missed firings recorded one by one per catch-up; after a long
// downtime the oldest record says that earlier ones were missed too.
const maxMissedRecords = 100

// admitted is a firing admitted to start, to start outside the lock.
type admitted struct {
	e   *entry
	rec Record
}

func (s *Scheduler) loop(ctx context.Context) {
	defer close(s.done)
	for {
		s.mu.Lock()
		seen := s.pokes
		s.mu.Unlock()

		wakeAt := s.tick(ctx)
		var timer Timer
		var fired <-chan time.Time
		if !wakeAt.IsZero() {
			timer = s.clock.NewTimer(max(wakeAt.Sub(s.clock.Now()), 0))
			fired = timer.C()
		}

		s.mu.Lock()
		s.settled = seen
		s.idle.Broadcast()
		s.mu.Unlock()

		select {
		case <-ctx.Done():
		case <-fired:
		case <-s.wake:
		}
		if timer != nil {
			timer.Stop()
		}
		if ctx.Err() != nil {
			return
		}
	}
}

// tick fires what is due, starts queued firings whose run ended, and returns when the
// next fire time is (zero if there is none).
func (s *Scheduler) tick(ctx context.Context) time.Time {
	now := s.clock.Now()
	s.mu.Lock()
	due := make([]*entry, 0, 8)
	var starts []admitted
	for _, e := range s.entries {
		if e.queued != nil && e.active == 0 {
			rec := *e.queued
			e.queued = nil
			e.active++
			s.starting++
			starts = append(starts, admitted{e, rec})
		}
		if !e.next.IsZero() && !e.next.After(now) {
			due = append(due, e)
		}
	}
	slices.SortFunc(due, func(a, b *entry) int {
		return cmp.Or(a.next.Compare(b.next), cmp.Compare(a.sched.ID, b.sched.ID))
	})
	for _, e := range due {
		starts = append(starts, s.fire(e, now)...)
	}
	var wakeAt time.Time
	for _, e := range s.entries {
		if !e.next.IsZero() && (wakeAt.IsZero() || e.next.Before(wakeAt)) {
			wakeAt = e.next
		}
	}
	s.mu.Unlock()

	s.flush(ctx)
	// Each firing starts off the loop: a Starter may check the schedule's wake
	// conditions first (a command, a page), which must not hold other schedules up.
	s.mu.Lock()
	s.launching += len(starts)
	s.mu.Unlock()
	s.launches.Add(len(starts))
	for _, a := range starts {
		go func() {
			defer s.launches.Done()
			s.launch(ctx, a.e, a.rec)
			s.mu.Lock()
			s.launching--
			s.idle.Broadcast()
			s.mu.Unlock()
		}()
	}
	return wakeAt
}

// fire handles e's fire times up to now: the latest runs if it is on time (within the
// grace period); the others are missed, and the missed-run policy may run the latest of
// them once. Called with s.mu held; returns the firing to start, if any.
func (s *Scheduler) fire(e *entry, now time.Time) []admitted {
	times, more := dueTimes(e.sched.Spec, e.cursor, now, maxMissedRecords)
	if len(times) == 0 {
		e.cursor = now
		e.plan()
		return nil
	}
	latest := times[len(times)-1]
	e.cursor = latest
	e.plan()

	var run *Record
	missed := times
	const base = "the daemon was not running (or the machine slept) at the scheduled time"
	why := base + "; missed-run policy is skip"
	p := e.sched.Missed
	if now.Sub(latest) < s.grace {
		missed = times[:len(times)-1]
		if p.Mode != MissedSkip {
			why = base + "; the on-time firing at " + stamp(latest) + " ran for it"
		}
		r := s.newRecord(e, latest, false)
		run = &r
	} else if p.Mode == MissedRunOnce || p.Mode == MissedRunIfWithin && now.Sub(latest) <= p.Window {
		missed = times[:len(times)-1]
		why = base + "; one catch-up run was made, for " + stamp(latest)
		r := s.newRecord(e, latest, false)
		r.Reason = fmt.Sprintf("catch-up run, %v late (%s)", now.Sub(latest).Round(time.Second), base)
		run = &r
	} else if p.Mode == MissedRunIfWithin {
		why = fmt.Sprintf("%s; the latest missed firing is more than the run_if_within window of %v old", base, p.Window)
	}
	for i, t := range missed {
		r := s.newRecord(e, t, false)
		r.Outcome, r.Reason = api.RunMissed, why
		if i == 0 && more {
			r.Reason += "; earlier firings were missed too and are not recorded one by one"
		}
		s.note(r)
	}
	if run != nil && s.admit(e, run) {
		return []admitted{{e, *run}}
	}
	return nil
}

func stamp(t time.Time) string { return t.Format(time.RFC3339) }

// dueTimes returns the fire times of sp in (after, now]: the latest limit of them, and
// whether earlier ones were left out. It looks back from now in growing steps, so a long
// downtime costs about as much as a short one.
func dueTimes(sp Spec, after, now time.Time, limit int) ([]time.Time, bool) {
	if sp.every > 0 {
		// @every keeps its phase: after+d, after+2d, …
		first := sp.Next(after)
		if first.After(now) {
			return nil, false
		}
		n := int64(now.Sub(first)/sp.every) + 1
		k := min(n, int64(limit))
		times := make([]time.Time, k)
		last := first.Add(time.Duration(n-1) * sp.every)
		for i := range k {
			times[k-1-i] = last.Add(-time.Duration(i) * sp.every)
		}
		return times, n > k
	}
	span := time.Hour
	for i := 0; ; i++ {
		from, clipped := now.Add(-span), true
		if i == 12 || span >= now.Sub(after) {
			from, clipped = after, false
		}
		var times []time.Time
		for t := sp.Next(from); !t.IsZero() && !t.After(now); t = sp.Next(t) {
			times = append(times, t)
		}
		if len(times) >= limit || !clipped {
			more := len(times) > limit
			if clipped {
				first := sp.Next(after)
				more = more || !first.IsZero() && !first.After(from)
			}
			if len(times) > limit {
				times = times[len(times)-limit:]
			}
			return times, more
		}
		span *= 4
	}
}

// admit applies e's concurrency policy to a firing: it reports true if the firing may
// start now (and counts it as starting), else queues or skips it. Called with s.mu held.
func (s *Scheduler) admit(e *entry, r *Record) bool {
	if e.active == 0 || e.sched.Concurrency == ConcurrencyParallel {
		e.active++
		s.starting++
		return true
	}
	if e.sched.Concurrency == ConcurrencyQueue && e.queued == nil {
		r.Outcome, r.Reason = api.RunQueued, "waiting for the running run to end"
		q := *r
		e.queued = &q
		s.note(q)
		return false
	}
	r.Outcome, r.Reason = api.RunSkipped, "the previous run was still running"
	if e.queued != nil {
		r.Reason = "the previous run was still running and another firing was already queued"
	}
	s.note(*r)
	return false
}

// launch calls the Starter for an admitted firing and records the result.
func (s *Scheduler) launch(ctx context.Context, e *entry, r Record) Record {
	r.Started = s.clock.Now()
	if r.Outcome == api.RunQueued {
		r.Reason = ""
	}
	runID, err := s.callStart(ctx, r.Firing)

	s.mu.Lock()
	s.starting--
	over := err != nil
	var not *NotStarted
	if errors.As(err, &not) && not.Outcome.Final() {
		r.Outcome, r.Reason, r.Ended = not.Outcome, not.Reason, s.clock.Now()
		s.note(r)
	} else if over {
		r.Outcome, r.Reason, r.Ended = api.RunFailed, "could not start: "+err.Error(), s.clock.Now()
		s.note(r)
	} else {
		r.RunID, r.Outcome = runID, api.RunStarted
		s.note(r)
		var res Result
		if res, over = s.early[runID]; over {
			s.note(ended(r, res, s.clock.Now()))
		} else {
			s.runs[runID] = &inflight{e, r}
		}
	}
	if over {
		e.active--
	}
	if s.starting == 0 {
		clear(s.early)
	}
	s.mu.Unlock()
	s.flush(ctx)
	if over {
		s.poke() // a queued firing may start now
	}
	return r
}

// callStart calls the Starter, turning a panic into an error.
func (s *Scheduler) callStart(ctx context.Context, f Firing) (runID string, err error) {
	defer func() {
		if p := recover(); p != nil {
			s.log.Error("schedule: starter panicked", "schedule", f.ScheduleID, "firing", f.ID,
				"panic", p, "stack", string(debug.Stack()))
			err = fmt.Errorf("starter panicked: %v", p)
		}
	}()
	runID, err = s.starter(ctx, f)
	if err == nil && runID == "" {
		err = errors.New("starter returned no run id")
	}
	return runID, err
}

// ended returns r updated with the run's result.
func ended(r Record, res Result, now time.Time) Record {
	switch res.Outcome {
	case api.RunFinished, api.RunFailed, api.RunBudgetExhausted:
	default:
		res.Reason = fmt.Sprintf("run ended with unknown outcome %q: %s", res.Outcome, res.Reason)
		res.Outcome = api.RunFailed
	}
	r.Result, r.Ended = res, now
	return r
}

// dropQueued records e's queued firing, if any, as skipped. Called with s.mu held.
func (s *Scheduler) dropQueued(e *entry, why string) {
	if e.queued == nil {
		return
	}
	r := *e.queued
	e.queued = nil
	r.Outcome, r.Reason = api.RunSkipped, why
	s.note(r)
}

// note queues a record to write; the caller flushes after unlocking. Called with s.mu held.
func (s *Scheduler) note(r Record) { s.pending = append(s.pending, r) }

// flush writes the pending records in order. When it returns, every record noted before
// the call has been written (by this call or a concurrent one).
func (s *Scheduler) flush(ctx context.Context) {
	s.flushMu.Lock()
	defer s.flushMu.Unlock()
	ctx = context.WithoutCancel(ctx)
	for {
		s.mu.Lock()
		batch := s.pending
		s.pending = nil
		s.mu.Unlock()
		if len(batch) == 0 {
			return
		}
		for _, r := range batch {
			s.record(ctx, r)
		}
	}
}

func (s *Scheduler) record(ctx context.Context, r Record) {
	if s.recorder == nil {
		return
	}
	defer func() {
		if p := recover(); p != nil {
			s.log.Error("schedule: recorder panicked", "firing", r.ID, "panic", p, "stack", string(debug.Stack()))
		}
	}()
	if err := s.recorder(ctx, r); err != nil {
		s.log.Warn("schedule: recording a firing failed", "schedule", r.ScheduleID, "firing", r.ID,
			"outcome", r.Outcome, "err", err)
	}
}
