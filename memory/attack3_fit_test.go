package memory

import (
	"os"
	"testing"
	"time"
)

// Measurement: Prepare of 30 uncached 8,000-byte memories (what a prompt pays when the
// hit cache could not keep them: a batch came in during the search, or it was reset).
func TestAttack3PrepareLongUncached(t *testing.T) {
	if os.Getenv("ATTACK3_MEASURE") == "" {
		t.Skip("measurement: set ATTACK3_MEASURE=1")
	}
	gen := newCorpusGen(3, 1)
	var hits []Hit
	for i := range 30 {
		text := gen.words(1400)
		if len(text) > 8000 {
			text = text[:8000]
		}
		hits = append(hits, Hit{ID: string(rune('a' + i)), Text: text, Score: float64(30 - i)})
	}
	q := gen.words(100)
	Prepare(hits, q)
	s := time.Now()
	for range 10 {
		Prepare(hits, q).Fit(FitOptions{Query: q, Budget: 2000})
	}
	t.Logf("Prepare+Fit of 30 × %d-byte memories: %v", len(hits[0].Text), time.Since(s)/10)
}
