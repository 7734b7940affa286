package memory

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// BenchmarkFit prepares and fits a prompt's memory section from 30 hits: short ones like
// a step's episode, and long ones full of the query's words (a hostile chat log), whose
// cost the analysis bound (maxAnalyzed, maxMatches) caps; "cached" are the episodes as a
// search returns them from the hit cache, analyzed by an earlier prompt.
func BenchmarkFit(b *testing.B) {
	at := time.Date(2023, 5, 8, 13, 56, 0, 0, time.UTC)
	episode := "Step 12: write_file(path=notes/12.txt) → succeeded. Reasoning: keep the notes tidy and summarize what they contain."
	for _, c := range []struct {
		name, text, query string
		cached            bool
	}{
		{"episodes", episode, "summarize the notes in my workspace tidy", false},
		{"cached", episode, "summarize the notes in my workspace tidy", true},
		{"long_repeats", strings.Repeat("deploy the release now ", 180), "deploy release", false},
	} {
		var hits []Hit
		for i := range PromptCandidates {
			h := Hit{ID: fmt.Sprint(i), Kind: KindChat, Speaker: "Ann", Created: at, Score: float64(30 - i), Text: c.text}
			if c.cached {
				h.an = &fitText{}
			}
			hits = append(hits, h)
		}
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Fit(hits, FitOptions{Query: c.query, Budget: 1950})
			}
		})
	}
}
