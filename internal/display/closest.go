package display

import "fmt"

// Closest returns the candidate nearest to s by edit distance when it is near enough to
// be a typo of it (two edits, or a third of the word), else "". The first of equally
// near candidates wins: pass them sorted for a stable answer.
func Closest(s string, candidates []string) string {
	best, bestDist := "", 0
	for _, c := range candidates {
		if d := editDistance(s, c); best == "" || d < bestDist {
			best, bestDist = c, d
		}
	}
	if best == "" || (bestDist > 2 && bestDist*3 > len(s)) {
		return ""
	}
	return best
}

// DidYouMean is ` (did you mean "x"?)` for the candidate Closest finds, or "".
func DidYouMean(s string, candidates []string) string {
	if best := Closest(s, candidates); best != "" {
		return fmt.Sprintf(" (did you mean %q?)", best)
	}
	return ""
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
