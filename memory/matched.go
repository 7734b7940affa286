package memory

import (
	"strings"
	"time"
)

// fillMatched fills Hit.Matched. It analyzes the hits again rather than asking Bleve to explain
// its scores, which would cost every search; the context is not stored, so a lexical hit
// whose own fields have none of the query's words was found by it.
func fillMatched(an analyzers, q Query, now time.Time, hits []Hit) {
	words := queryTerms(an.text, q.Text)
	asked := queryDates(q.Text, now)
	for i := range hits {
		h := &hits[i]
		h.Matched = nil
		inText := stringSet(queryTerms(an.text, h.Text))
		inSpeaker := stringSet(queryTerms(an.text, h.Speaker))
		for _, w := range words {
			if inText[w] {
				h.Matched = append(h.Matched, "text:"+w)
			}
		}
		for _, w := range words {
			if inSpeaker[w] {
				h.Matched = append(h.Matched, "speaker:"+w)
			}
		}
		lexical := len(h.Matched) > 0
		dates := stringSet(strings.Fields(dateTerms(h.Text, h.Created)))
		for _, d := range asked {
			if dates[d] {
				h.Matched = append(h.Matched, "dates:"+d)
			}
		}
		switch {
		case lexical:
		case h.BM25 > 0:
			h.Matched = append(h.Matched, "context")
		case h.Similarity > 0:
			h.Matched = append(h.Matched, "meaning")
		}
	}
}

func stringSet(ss []string) map[string]bool {
	m := make(map[string]bool, len(ss))
	for _, s := range ss {
		m[s] = true
	}
	return m
}
