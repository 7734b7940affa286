package memory

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// BenchmarkFit prepares and fits a prompt's memory section from 30 hits: short ones like
// a step's episode, and long ones full of the query's words (a hostile chat log), whose
// cost the analysis bound (maxAnalyzed, maxMatches) caps.
func BenchmarkFit(b *testing.B) {
	at := time.Date(2023, 5, 8, 13, 56, 0, 0, time.UTC)
	for _, c := range []struct{ name, text, query string }{
		{"episodes", "Step 12: write_file(path=notes/12.txt) → succeeded. Reasoning: keep the notes tidy and summarize what they contain.",
			"summarize the notes in my workspace tidy"},
		{"long_repeats", strings.Repeat("deploy the release now ", 180), "deploy release"},
	} {
		var hits []Hit
		for i := range PromptCandidates {
			hits = append(hits, Hit{ID: fmt.Sprint(i), Kind: KindChat, Speaker: "Ann", Created: at, Score: float64(30 - i), Text: c.text})
		}
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Fit(hits, FitOptions{Query: c.query, Budget: 1950})
			}
		})
	}
}
