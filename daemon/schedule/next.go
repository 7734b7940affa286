package schedule

import (
	"time"

	"github.com/robfig/cron/v3"
)

// Next returns the next n fire times of s strictly after after, in s's time zone. It
// returns fewer when s stops firing (robfig looks five years ahead).
func Next(s Spec, after time.Time, n int) []time.Time {
	var out []time.Time
	for range n {
		t := s.Next(after)
		if t.IsZero() {
			break
		}
		out = append(out, t)
		after = t
	}
	return out
}

// Next returns the first fire time of s strictly after after, in s's time zone, or the
// zero time if there is none within five years.
//
// Daylight saving, for fixed-time specs (minute and hour fields without * or ?, and the
// descriptors other than @hourly), follows Vixie cron:
//   - a wall-clock time skipped by a spring-forward fires at the first instant after the
//     gap (30 2 * * * in America/New_York fires at 03:00 EDT on 2026-03-08); several
//     skipped times, or a skipped time and a real one at that instant, fire once;
//   - a wall-clock time repeated by a fall-back fires once, at its first occurrence
//     (30 1 * * * fires at 01:30 EDT on 2026-11-01, not again at 01:30 EST).
//
// Specs with * or ? in the minute or hour field run on elapsed time: */15 * * * * fires
// every 15 minutes through both changes, including both 01:xx hours of a fall-back.
// @every adds its duration to the last fire time and ignores wall clocks.
func (s Spec) Next(after time.Time) time.Time {
	switch {
	case s.every > 0:
		return cron.Every(s.every).Next(after).In(s.loc)
	case s.cron == nil:
		return time.Time{}
	}
	after = after.In(s.loc)
	// The loop only repeats to step over repeated wall-clock times, at most one per
	// minute of a repeated hour; the bound guards against a robfig surprise.
	for range 10_000 {
		c := s.cron.Next(after)
		if !c.After(after) && !c.IsZero() {
			return time.Time{}
		}
		if !s.fixed {
			return c
		}
		if g := s.gapFiring(after, c); !g.IsZero() {
			return g
		}
		if c.IsZero() || !repeated(c) {
			return c
		}
		after = c
	}
	return time.Time{}
}

// gapFiring returns the first spring-forward transition in (after, until] whose skipped
// wall-clock times include a fire time of s, or the zero time. A zero until means
// robfig found nothing: look a year ahead for a gap-only firing.
func (s Spec) gapFiring(after, until time.Time) time.Time {
	if until.IsZero() {
		until = after.AddDate(1, 0, 0)
	}
	t := after
	for {
		_, end := t.ZoneBounds()
		if end.IsZero() || end.After(until) {
			return time.Time{}
		}
		_, before := end.Add(-time.Nanosecond).Zone()
		_, now := end.Zone()
		if now > before {
			// The skipped wall times are [w0, w1), read as UTC so no zone interferes.
			w0 := time.Unix(end.Unix()+int64(before), 0).UTC()
			w1 := w0.Add(time.Duration(now-before) * time.Second)
			if m := s.wall.Next(w0.Add(-time.Second)); !m.IsZero() && m.Before(w1) {
				return end
			}
		}
		t = end
	}
}

// repeated reports whether t's wall-clock time already happened once, before a fall-back.
func repeated(t time.Time) bool {
	start, _ := t.ZoneBounds()
	if start.IsZero() {
		return false
	}
	_, before := start.Add(-time.Nanosecond).Zone()
	_, now := t.Zone()
	return before > now && t.Sub(start) < time.Duration(before-now)*time.Second
}
