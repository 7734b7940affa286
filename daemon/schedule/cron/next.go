package cron

import (
	"time"

	robfig "github.com/robfig/cron/v3"
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

// maxPeriods bounds the zone periods (stretches of one UTC offset) Next walks: two a
// year for five years, with room for the pseudo-periods Go adds at year ends.
const maxPeriods = 64

// Next returns the first fire time of s strictly after after, in s's time zone, or the
// zero time if there is none within about five years.
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
// every 15 minutes through both changes, including both 01:xx hours of a fall-back, and
// skips the wall times that do not exist. @every adds its duration and ignores wall clocks.
//
// robfig is only ever asked about fixed UTC offsets, one zone period at a time: in zones
// with daylight saving it skips spring-forward times, fires fall-back times twice, and
// loops forever on some historical transitions (Pacific/Apia, December 2011).
func (s Spec) Next(after time.Time) time.Time {
	switch {
	case s.every > 0:
		return robfig.Every(s.every).Next(after).In(s.loc)
	case s.wall == nil:
		return time.Time{}
	}
	from := after.In(s.loc) // fire times are strictly after from
	at := from              // an instant in the zone period being searched
	for range maxPeriods {
		off, start, end := period(at)
		c := s.inOffset(off).Next(from)
		if c.IsZero() {
			return time.Time{}
		}
		if end.IsZero() || c.Before(end) {
			if s.fixed && repeated(c, start) {
				from, at = c, c
				continue
			}
			return c.In(s.loc)
		}
		if s.fixed && s.skipsFireTime(end) {
			return end.In(s.loc)
		}
		// Search the next period from its first instant (robfig starts a second on).
		from, at = end.Add(-time.Nanosecond), end
	}
	return time.Time{}
}

// inOffset returns s's fields read in a fixed UTC offset.
func (s Spec) inOffset(off int) *robfig.SpecSchedule {
	c := *s.wall
	c.Location = time.FixedZone("", off)
	return &c
}

// period returns the UTC offset at t and the bounds of the zone period holding t; end is
// zero if the offset never changes again.
func period(t time.Time) (off int, start, end time.Time) {
	_, off = t.Zone()
	start, end = t.ZoneBounds()
	if !end.IsZero() && !end.After(t) {
		// Past the tz database's table (~2037) Go computes periods from the zone's rule and
		// ends one a day early in leap years; the offset does not change there.
		start, end = t, t.Add(time.Hour)
	}
	return off, start, end
}

// skipsFireTime reports whether the transition at t moves the clock forward over a wall
// time on which s fires.
func (s Spec) skipsFireTime(t time.Time) bool {
	_, before := t.Add(-time.Nanosecond).Zone()
	_, after := t.Zone()
	if after <= before {
		return false
	}
	// The skipped wall times are [w0, w1), written as UTC so no zone interferes.
	w0 := time.Unix(t.Unix()+int64(before), 0).UTC()
	w1 := w0.Add(time.Duration(after-before) * time.Second)
	m := s.wall.Next(w0.Add(-time.Second))
	return !m.IsZero() && m.Before(w1)
}

// repeated reports whether t's wall-clock time already happened once: t falls within the
// first hour (or however long) after a fall-back that began its zone period at start.
func repeated(t, start time.Time) bool {
	if start.IsZero() {
		return false
	}
	_, before := start.Add(-time.Nanosecond).Zone()
	_, after := start.Zone()
	return before > after && t.Sub(start) < time.Duration(before-after)*time.Second
}
