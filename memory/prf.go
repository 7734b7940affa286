package memory

import (
	"context"
	"fmt"
	"sort"
)

// Pseudo-relevance feedback (issue 18, multi-hop questions): the answer to "what activities
// does Melanie do?" is spread over memories that share few words with the question but some
// with each other. A second pass adds the rarest words of the first pass's top hits, with a
// low weight, so memories about the same things can surface. Variables so the benchmark can
// tune them; expandFrom 0 turns the second pass off.
var (
	expandFrom   = 3   // top hits the words are taken from
	expandTerms  = 5   // words added
	expandWeight = 0.2 // their weight against a word of the question
)

// expansion picks the second pass's words from the top hits: not in the query, found in at
// least two memories (a word of one memory finds nothing new), the ones in more of the top
// hits first, then the rarest.
func expansion(ctx context.Context, g *generation, text string, hits []Hit) ([]string, error) {
	if expandFrom <= 0 || expandTerms <= 0 || len(hits) < expandFrom {
		return nil, nil
	}
	inQuery := map[string]bool{}
	for _, t := range queryTerms(g.an.text, text) {
		inQuery[t] = true
	}
	in := map[string]int{}
	var cands []string
	for _, h := range hits[:expandFrom] {
		for _, t := range queryTerms(g.an.text, h.Text) {
			if inQuery[t] {
				continue
			}
			if in[t] == 0 {
				cands = append(cands, t)
			}
			in[t]++
		}
	}
	df, err := g.termDocFreqs(ctx, cands)
	if err != nil {
		return nil, fmt.Errorf("memory: search: %w", err)
	}
	kept := cands[:0]
	for _, t := range cands {
		if df[t] >= 2 {
			kept = append(kept, t)
		}
	}
	sort.SliceStable(kept, func(i, j int) bool {
		a, b := kept[i], kept[j]
		if in[a] != in[b] {
			return in[a] > in[b]
		}
		return df[a] < df[b]
	})
	return kept[:min(len(kept), expandTerms)], nil
}
