package cron

import (
	"cmp"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	robfig "github.com/robfig/cron/v3"

	"github.com/agentd/agentd/internal/display"
	_ "time/tzdata" // CRON_TZ= must work on machines without a zoneinfo database
)

// Spec is a parsed schedule spec. Build one with ParseIn; the zero Spec never fires.
type Spec struct {
	text  string
	loc   *time.Location
	every time.Duration        // @every; zero for field specs and other descriptors
	wall  *robfig.SpecSchedule // the fields, in UTC: they match wall-clock times
	fixed bool                 // minute and hour are fixed, so the DST rules apply
}

// MaxSpecLen bounds a spec's length; real specs are far shorter.
const MaxSpecLen = 200

// MinInterval is the shortest @every; field specs fire at most once a minute too, since the
// seconds field, when present, must name one second.
const MinInterval = time.Minute

// The field parser: 5 fields, or 6 with seconds first, and the descriptors. Time zone
// prefixes are handled here, never by robfig (it panics on "TZ=0").
var fieldParser = robfig.NewParser(robfig.SecondOptional | robfig.Minute | robfig.Hour | robfig.Dom |
	robfig.Month | robfig.Dow | robfig.Descriptor)

// ErrSpec is wrapped by every error ParseIn returns.
var ErrSpec = errors.New("bad schedule spec")

// ParseIn parses a spec in time zone loc unless it starts with CRON_TZ=Zone (or
// TZ=Zone), an IANA zone name.
// It accepts five fields (minute hour day-of-month month day-of-week), six with a seconds
// field first, the descriptors @yearly @annually @monthly @weekly @daily @midnight @hourly,
// and "@every <duration>" (at least MinInterval, whole seconds).
func ParseIn(spec string, loc *time.Location) (s Spec, err error) {
	defer func() {
		// Pre-validation should leave robfig nothing to panic on; this is the last resort.
		if r := recover(); r != nil {
			s, err = Spec{}, specErr(spec, "cannot be parsed (%v)", r)
		}
	}()
	text := strings.TrimSpace(spec)
	if text == "" {
		return Spec{}, specErr(spec, "is empty: want five fields (minute hour day-of-month month day-of-week), "+
			"e.g. \"0 9 * * 1-5\", or a descriptor such as @daily")
	}
	if len(text) > MaxSpecLen {
		return Spec{}, specErr(spec, "is too long (%d bytes, at most %d)", len(text), MaxSpecLen)
	}
	fields := strings.Fields(text)
	if loc, fields, err = zonePrefix(fields, cmp.Or(loc, time.Local)); err != nil {
		return Spec{}, specErr(spec, "%v", err)
	}
	s = Spec{text: text, loc: loc}
	if strings.HasPrefix(fields[0], "@") {
		err = s.parseDescriptor(fields)
	} else {
		err = s.parseFields(fields)
	}
	if err != nil {
		return Spec{}, specErr(spec, "%v", err)
	}
	return s, nil
}

func specErr(spec, format string, args ...any) error {
	return fmt.Errorf("%w: %q %s", ErrSpec, spec, fmt.Sprintf(format, args...))
}

// zonePrefix takes a leading CRON_TZ=Zone (or TZ=Zone) off fields.
func zonePrefix(fields []string, loc *time.Location) (*time.Location, []string, error) {
	key, zone, ok := strings.Cut(fields[0], "=")
	if !ok {
		return loc, fields, nil
	}
	if key != "CRON_TZ" && key != "TZ" {
		return nil, nil, fmt.Errorf("starts with an unknown %q: only CRON_TZ=Zone may come before the schedule", key+"=")
	}
	if zone == "" {
		return nil, nil, fmt.Errorf("has %s= without a zone: write e.g. %s=Europe/Berlin", key, key)
	}
	z, err := time.LoadLocation(zone)
	if err != nil {
		return nil, nil, fmt.Errorf("names an unknown time zone %q: use an IANA name such as America/New_York", zone)
	}
	if len(fields) == 1 {
		return nil, nil, fmt.Errorf("has nothing after %s: write e.g. \"%s 0 9 * * *\"", fields[0], fields[0])
	}
	return z, fields[1:], nil
}

func (s *Spec) parseDescriptor(fields []string) error {
	name := strings.ToLower(fields[0])
	if name == "@every" {
		if len(fields) != 2 {
			return errors.New("needs one duration after @every, e.g. \"@every 90m\"")
		}
		d, err := time.ParseDuration(fields[1])
		if err != nil {
			return fmt.Errorf("has %q after @every, which is not a duration such as 90m or 1h30m", fields[1])
		}
		if d <= 0 {
			return fmt.Errorf("has @every %v: the duration must be positive", d)
		}
		if d < MinInterval {
			return fmt.Errorf("fires too often: @every must be at least %v (schedules fire at most once a minute)", MinInterval)
		}
		if d%time.Second != 0 {
			return fmt.Errorf("has @every %v: use whole seconds", d)
		}
		s.every = d
		return nil
	}
	switch name {
	case "@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly":
	default:
		return fmt.Errorf("has an unknown descriptor %q: use @yearly, @monthly, @weekly, @daily, @hourly or @every <duration>", fields[0])
	}
	if len(fields) > 1 {
		return fmt.Errorf("has %q after %s, which takes nothing", strings.Join(fields[1:], " "), fields[0])
	}
	s.fixed = name != "@hourly"
	return s.build(name)
}

// A field of a spec: its name, bounds and (for month and day-of-week) names.
type field struct {
	name     string
	min, max int
	names    map[string]int
	hint     string // for a value that is not a number
	note     string // for a value out of range
}

var fieldDefs = []field{
	{name: "minute", max: 59},
	{name: "hour", max: 23},
	{name: "day-of-month", min: 1, max: 31},
	{name: "month", min: 1, max: 12, names: map[string]int{"jan": 1, "feb": 2, "mar": 3, "apr": 4,
		"may": 5, "jun": 6, "jul": 7, "aug": 8, "sep": 9, "oct": 10, "nov": 11, "dec": 12}, hint: " or a name such as jan"},
	{name: "day-of-week", max: 6, names: map[string]int{"sun": 0, "mon": 1, "tue": 2, "wed": 3, "thu": 4,
		"fri": 5, "sat": 6}, hint: " or a name such as mon", note: "; Sunday is 0"},
}

func (s *Spec) parseFields(fs []string) error {
	if len(fs) != 5 && len(fs) != 6 {
		return fmt.Errorf("has %s: want 5 (minute hour day-of-month month day-of-week), or 6 with seconds first", display.Count(len(fs), "field", "fields"))
	}
	rest := fs
	if len(fs) == 6 {
		if n, err := strconv.Atoi(fs[0]); err != nil || n > 59 || !isDigits(fs[0]) {
			return fmt.Errorf("has seconds field %q: give one second, 0-59 (schedules fire at most once a minute)", fs[0])
		}
		rest = fs[1:]
	}
	for i, f := range fieldDefs {
		if err := f.check(rest[i]); err != nil {
			return err
		}
	}
	s.fixed = !strings.ContainsAny(rest[0], "*?") && !strings.ContainsAny(rest[1], "*?")
	return s.build(strings.Join(fs, " "))
}

// check validates one field the way robfig reads it, with an error that names the field.
// Items are comma-separated; each is *, ?, N or N-M, optionally followed by /step.
func (f field) check(text string) error {
	for item := range strings.SplitSeq(text, ",") {
		if err := f.checkItem(item); err != nil {
			return fmt.Errorf("has %s field %q: %v", f.name, text, err)
		}
	}
	return nil
}

func (f field) checkItem(item string) error {
	if item == "" {
		return errors.New("empty item in a list")
	}
	rng, step, hasStep := strings.Cut(item, "/")
	if hasStep {
		if n, err := strconv.Atoi(step); err != nil || n < 1 || !isDigits(step) {
			return fmt.Errorf("step %q is not a positive whole number", step)
		}
	}
	if rng == "*" || rng == "?" {
		return nil
	}
	lo, hi, isRange := strings.Cut(rng, "-")
	switch {
	case lo == "*" || lo == "?":
		return fmt.Errorf("%s cannot start a range", lo)
	case isRange && (lo == "" || hi == ""):
		return fmt.Errorf("range %q needs a number at each end (negative numbers are not allowed)", rng)
	}
	a, err := f.value(lo)
	if err != nil {
		return err
	}
	if !isRange {
		return nil
	}
	b, err := f.value(hi)
	if err != nil {
		return err
	}
	if a > b {
		return fmt.Errorf("range %s runs backwards", rng)
	}
	return nil
}

func (f field) value(s string) (int, error) {
	if n, ok := f.names[strings.ToLower(s)]; ok {
		return n, nil
	}
	if s == "" || !isDigits(s) {
		return 0, fmt.Errorf("%q is not a number%s", s, f.hint)
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < f.min || n > f.max {
		return 0, fmt.Errorf("%s is out of range %d-%d%s", s, f.min, f.max, f.note)
	}
	return n, nil
}

func isDigits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}

// neverBefore is where Parse looks for a first fire time (robfig searches five years on),
// in wall-clock time: whether a spec ever fires does not depend on its zone.
var neverBefore = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// build hands checked text to robfig and rejects specs that can never fire.
func (s *Spec) build(text string) error {
	sched, err := fieldParser.Parse(text)
	if err != nil {
		return fmt.Errorf("is not valid: %v", err)
	}
	c, ok := sched.(*robfig.SpecSchedule)
	if !ok {
		return fmt.Errorf("is not a field spec (%T)", sched)
	}
	c.Location = time.UTC
	s.wall = c
	if c.Next(neverBefore).IsZero() {
		return errors.New("never fires: no month in the month field has that day of the month")
	}
	return nil
}

// String returns the spec as given (trimmed); Parse(s.String()) gives s back.
func (s Spec) String() string { return s.text }

// Location is the time zone the spec is read in.
func (s Spec) Location() *time.Location {
	if s.loc == nil {
		return time.UTC
	}
	return s.loc
}

// IsZero reports whether s is the zero Spec, which never fires.
func (s Spec) IsZero() bool { return s.wall == nil && s.every == 0 }
