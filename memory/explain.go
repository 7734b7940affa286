package memory

import "time"

// Match says why a hit matched a query, for people reading search results (agentctl
// memory search): which of the memory's words the query has, in which fields, and its
// date when the query asks about time. It analyzes the hit again rather than asking Bleve
// to explain its scores, which would cost every search.
type Match struct {
	// Words are the memory's own words (as written) whose stems the query has, distinct,
	// in the order they first appear; at most maxMatchWords.
	Words []string
	// Fields are where the query's words appear: "text", "source", "speaker"; "context"
	// alone when the search found it by the turn before it (which is not stored).
	Fields []string
	// Date is the memory's time when the query asks about time ("when", a month, a year,
	// "last week"…); zero otherwise.
	Date time.Time
	// Similar is set when the hit came from embedding similarity without a shared word.
	Similar bool
}

const maxMatchWords = 8

// AsksAboutTime reports whether a query asks about time the way search reads it: a "when"
// question (asksWhen) or a date it names ("in May", "2022", "last week"; resolveDates).
func AsksAboutTime(query string) bool {
	return asksWhen(query) || len(resolveDates(query, time.Now())) > 0
}

// Explain says why h matched query.
func Explain(query string, h Hit) Match {
	var m Match
	terms := analyzedTerms(query)
	seen := map[string]bool{}
	for _, t := range analyze(h.Text) {
		term := string(t.Term)
		if !terms[term] || seen[term] {
			continue
		}
		seen[term] = true
		if len(m.Words) < maxMatchWords && t.End <= len(h.Text) {
			m.Words = append(m.Words, h.Text[t.Start:t.End])
		}
	}
	if len(seen) > 0 {
		m.Fields = append(m.Fields, "text")
	}
	if hasAny(h.Source, terms) {
		m.Fields = append(m.Fields, "source")
	}
	if hasAny(h.Speaker, terms) {
		m.Fields = append(m.Fields, "speaker")
	}
	if AsksAboutTime(query) && !h.Created.IsZero() {
		m.Date = h.Created.UTC()
	}
	m.Similar = len(m.Fields) == 0 && h.Similarity > 0
	if len(m.Fields) == 0 && h.BM25 > 0 {
		// Found by words, none of them its own: they were in its context (the dates field
		// only adds to scores, it finds nothing).
		m.Fields = []string{"context"}
	}
	return m
}

// hasAny reports whether s, analyzed, has one of terms.
func hasAny(s string, terms map[string]bool) bool {
	for _, t := range analyze(s) {
		if terms[string(t.Term)] {
			return true
		}
	}
	return false
}
