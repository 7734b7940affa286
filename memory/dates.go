package memory

import (
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// Dates: a memory says "I went there yesterday"; a question asks "when did she go
// there?" or "what did she do in May?". When a memory is indexed, the time expressions in its
// text are resolved to absolute dates from the memory's own time and written, with that time,
// into the dates field as terms a question's date words can match:
//
//	2023-05-07   a day          ("yesterday", "on Friday", "7 May 2023")
//	2023-W18     an ISO week    ("last week")
//	2023-05      a month        ("last month", and the month of every day above)
//	2023         a year         ("last year", and the year of everything above)
//	may          a month's name (for "in May" without a year)
//	@date        the text mentions a time: "when" questions favour such memories

// grain is how precise a resolved date is.
type grain int

const (
	grainDay grain = iota
	grainWeek
	grainMonth
	grainYear
)

// mention is one resolved time expression.
type mention struct {
	at    time.Time
	grain grain
}

// terms are the dates-field terms of a time at grain g and coarser.
func terms(t time.Time, g grain) []string {
	var out []string
	switch g {
	case grainDay:
		out = append(out, t.Format("2006-01-02"))
		fallthrough
	case grainWeek, grainMonth:
		out = append(out, t.Format("2006-01"), strings.ToLower(t.Month().String()))
	}
	return append(out, t.Format("2006"))
}

// dateTerms is the dates field of a memory with this text, created at created: its own day
// and the dates its text mentions. "" for a memory without a time (created at the epoch:
// clean's stand-in for none) that mentions none.
func dateTerms(text string, created time.Time) string {
	var out []string
	if created.Unix() != 0 {
		out = terms(created, grainDay)
		ms := resolveDates(text, created)
		for _, m := range ms {
			out = append(out, terms(m.at, m.grain)...)
		}
		if len(ms) > 0 {
			out = append(out, mentionTerm)
		}
	}
	slices.Sort(out)
	return strings.Join(slices.Compact(out), " ")
}

// mentionTerm marks a memory whose text mentions a time.
const mentionTerm = "@date"

var (
	weekdays = map[string]time.Weekday{"sunday": time.Sunday, "monday": time.Monday, "tuesday": time.Tuesday,
		"wednesday": time.Wednesday, "thursday": time.Thursday, "friday": time.Friday, "saturday": time.Saturday,
		// Abbreviations that are not also words ("sun", "sat" and "wed" are).
		"mon": time.Monday, "tue": time.Tuesday, "tues": time.Tuesday, "thu": time.Thursday, "thur": time.Thursday,
		"thurs": time.Thursday, "fri": time.Friday}
	months = map[string]time.Month{"january": 1, "february": 2, "march": 3, "april": 4, "may": 5, "june": 6,
		"july": 7, "august": 8, "september": 9, "october": 10, "november": 11, "december": 12}
	counts = map[string]int{"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
		"seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "a couple of": 2,
		"a couple": 2, "couple of": 2, "a few": 3, "few": 3}
)

// word is one word of a sentence: as written and lowercased.
type word struct{ orig, low string }

// sentences splits text into sentences of words (letters, digits and apostrophes); a
// sentence ends at '.', '!', '?' or a line break.
func sentences(text string) [][]word {
	var out [][]word
	var cur []word
	start := -1
	flush := func(end int) {
		if start >= 0 {
			w := text[start:end]
			cur = append(cur, word{w, strings.ToLower(w)})
			start = -1
		}
	}
	for i, r := range text {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '\'' || r == '’':
			if start < 0 {
				start = i
			}
		default:
			flush(i)
			if r == '.' || r == '!' || r == '?' || r == '\n' {
				if len(cur) > 0 {
					out = append(out, cur)
				}
				cur = nil
			}
		}
	}
	flush(len(text))
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// futureWords make a bare weekday in the same sentence the next one, not the last.
var futureWords = map[string]bool{"will": true, "gonna": true, "plan": true, "planning": true, "plans": true,
	"next": true, "soon": true, "tomorrow": true, "upcoming": true, "going": true, "coming": true}

// resolveDates finds the time expressions of text and resolves them against now (the
// memory's own time), in the order found. A bare weekday is the last one before now unless
// its sentence speaks of the future.
func resolveDates(text string, now time.Time) []mention {
	var out []mention
	for _, ws := range sentences(text) {
		out = append(out, resolveSentence(ws, now)...)
	}
	return out
}

func resolveSentence(ws []word, now time.Time) []mention {
	future := false
	for _, w := range ws {
		if futureWords[w.low] || strings.HasSuffix(w.low, "'ll") || strings.HasSuffix(w.low, "’ll") {
			future = true
		}
	}
	at := func(i int) string {
		if i < 0 || i >= len(ws) {
			return ""
		}
		return ws[i].low
	}
	day := func(t time.Time) mention { return mention{t, grainDay} }
	var out []mention
	for i := 0; i < len(ws); i++ {
		w, next := ws[i].low, at(i+1)
		switch {
		case w == "yesterday":
			out = append(out, day(now.AddDate(0, 0, -1)))
		case w == "last" && next == "night":
			out = append(out, day(now.AddDate(0, 0, -1)))
			i++
		case w == "today" || w == "tonight" || w == "this" && (next == "morning" || next == "afternoon" || next == "evening"):
			out = append(out, day(now))
		case w == "tomorrow":
			out = append(out, day(now.AddDate(0, 0, 1)))
		case relWords[w] && units[next] != "":
			out = append(out, relativeUnit(w, units[next], now))
			i++
		case relWords[w] && isWeekday(next):
			out = append(out, day(weekday(now, weekdays[next], w, future)))
			i++
		case isWeekday(w):
			out = append(out, day(weekday(now, weekdays[w], "", future)))
		default:
			n, used := countAt(ws, i)
			if used == 0 || units[at(i+used)] == "" || units[at(i+used)] == "weekend" {
				continue
			}
			unit := units[at(i+used)]
			if a := at(i + used + 1); a == "ago" || a == "before" || a == "back" {
				out = append(out, shift(now, -n, unit))
			} else if p := at(i - 1); p == "in" || p == "within" || p == "after" {
				out = append(out, shift(now, n, unit))
			}
			i += used
		}
	}
	return append(out, absolute(ws, now)...)
}

var (
	relWords = map[string]bool{"last": true, "past": true, "previous": true, "this": true, "next": true, "coming": true}
	units    = map[string]string{"day": "day", "days": "day", "week": "week", "weeks": "week", "weekend": "weekend",
		"month": "month", "months": "month", "year": "year", "years": "year"}
)

func isWeekday(w string) bool { _, ok := weekdays[w]; return ok }

// countAt reads a count at ws[i] ("3", "three", "a", "a couple of", "a few") and how many
// words it took; 0 words when there is none.
func countAt(ws []word, i int) (n, used int) {
	if c := ws[i].low[0]; c >= '0' && c <= '9' {
		if n, err := strconv.Atoi(ws[i].low); err == nil && n > 0 && n < 100 {
			return n, 1
		}
		return 0, 0
	}
	if _, ok := countStarts[ws[i].low]; !ok {
		return 0, 0
	}
	for _, k := range []int{3, 2, 1} {
		if i+k > len(ws) {
			continue
		}
		parts := make([]string, k)
		for j := range parts {
			parts[j] = ws[i+j].low
		}
		if n, ok := counts[strings.Join(parts, " ")]; ok {
			return n, k
		}
	}
	return 0, 0
}

// countStarts are the first words of the counts.
var countStarts = func() map[string]bool {
	m := map[string]bool{}
	for c := range counts {
		m[strings.Fields(c)[0]] = true
	}
	return m
}()

// relativeUnit resolves "last week", "this month", "next year", "last weekend"…
func relativeUnit(which, unit string, now time.Time) mention {
	n := 0
	switch which {
	case "last", "past", "previous":
		n = -1
	case "next", "coming":
		n = 1
	}
	if unit == "weekend" {
		// The Saturday of this week's weekend, a week earlier or later.
		sat := now.AddDate(0, 0, int(time.Saturday-now.Weekday()))
		if now.Weekday() == time.Sunday {
			sat = now.AddDate(0, 0, -1)
		}
		return mention{sat.AddDate(0, 0, 7*n), grainDay}
	}
	return shift(now, n, unit)
}

// shift moves now by n units and gives the unit's grain.
func shift(now time.Time, n int, unit string) mention {
	switch unit {
	case "day":
		return mention{now.AddDate(0, 0, n), grainDay}
	case "week":
		return mention{now.AddDate(0, 0, 7*n), grainWeek}
	case "month":
		return mention{now.AddDate(0, n, 0), grainMonth}
	}
	return mention{now.AddDate(n, 0, 0), grainYear}
}

// weekday resolves "Friday", "last Friday", "next Friday": the nearest such day before now,
// or after it when the words or the sentence look ahead; never now itself.
func weekday(now time.Time, wd time.Weekday, which string, future bool) time.Time {
	ahead := which == "next" || which == "coming" || (which == "" || which == "this") && future
	if ahead {
		d := (int(wd)-int(now.Weekday())+6)%7 + 1
		return now.AddDate(0, 0, d)
	}
	d := (int(now.Weekday())-int(wd)+6)%7 + 1
	return now.AddDate(0, 0, -d)
}

// absolute resolves dates the text spells out: "7 May 2023", "May 7th", "in May", "2022". A
// month without a year is in now's year. Month names count only capitalized ("may" and
// "march" are verbs too), and "May" opening a sentence alone is the modal.
func absolute(ws []word, now time.Time) []mention {
	var out []mention
	used := make([]bool, len(ws))
	for i, w := range ws {
		mon, ok := months[w.low]
		if !ok || w.orig[0] < 'A' || w.orig[0] > 'Z' {
			continue
		}
		d, y, g := 1, now.Year(), grainMonth
		if i > 0 && dayNumber(ws[i-1].low) > 0 {
			d, g, used[i-1] = dayNumber(ws[i-1].low), grainDay, true
		} else if i > 1 && ws[i-1].low == "of" && dayNumber(ws[i-2].low) > 0 {
			d, g, used[i-2] = dayNumber(ws[i-2].low), grainDay, true
		}
		j := i + 1
		if g == grainMonth && j < len(ws) && dayNumber(ws[j].low) > 0 {
			d, g, used[j] = dayNumber(ws[j].low), grainDay, true
			j++
		}
		if j < len(ws) && yearNumber(ws[j].low) > 0 {
			y, used[j] = yearNumber(ws[j].low), true
		}
		if i == 0 && w.low == "may" && g == grainMonth && (j >= len(ws) || !used[j]) {
			continue
		}
		out = append(out, mention{time.Date(y, mon, d, 12, 0, 0, 0, time.UTC), g})
	}
	for i, w := range ws {
		if y := yearNumber(w.low); y > 0 && !used[i] {
			out = append(out, mention{time.Date(y, 1, 1, 12, 0, 0, 0, time.UTC), grainYear})
		}
	}
	return out
}

// dayNumber reads "7", "7th", "21st" as a day of the month; 0 if it is not one.
func dayNumber(w string) int {
	for _, suf := range []string{"st", "nd", "rd", "th"} {
		w = strings.TrimSuffix(w, suf)
	}
	if n, err := strconv.Atoi(w); err == nil && n >= 1 && n <= 31 && len(w) <= 2 {
		return n
	}
	return 0
}

// yearNumber reads "2023" as a year (1900–2099); 0 if it is not one.
func yearNumber(w string) int {
	if len(w) != 4 || (w[:2] != "19" && w[:2] != "20") {
		return 0
	}
	n, err := strconv.Atoi(w)
	if err != nil {
		return 0
	}
	return n
}

// asksWhen reports whether a question asks for a time: "when", "what year", "which month",
// "how long ago".
func asksWhen(text string) bool {
	for _, ws := range sentences(text) {
		for i, w := range ws {
			next := ""
			if i+1 < len(ws) {
				next = ws[i+1].low
			}
			switch {
			case w.low == "when",
				(w.low == "what" || w.low == "which") && (next == "year" || next == "month" || next == "day" || next == "date"),
				w.low == "how" && next == "long" && i+2 < len(ws) && ws[i+2].low == "ago":
				return true
			}
		}
	}
	return false
}

// queryDates are the dates-field terms a search's text asks about, resolved against now:
// the dates it names ("in May", "2022", "last year") and, when it asks "when", mentionTerm.
func queryDates(text string, now time.Time) []string {
	var out []string
	if asksWhen(text) {
		out = append(out, mentionTerm)
	}
	for _, m := range resolveDates(text, now) {
		if m.grain == grainMonth && !strings.Contains(text, m.at.Format("2006")) {
			out = append(out, strings.ToLower(m.at.Month().String())) // "in May": any year's May
		} else {
			out = append(out, terms(m.at, m.grain)[0])
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
