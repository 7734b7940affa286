package team

import (
	"fmt"
	"sort"
	"strings"
)

// indexLines maps dotted keys to the line they are set on: table headers
// ([phases.review] → "phases.review") and the keys under them ("phases.review.prompt").
// Multi-line strings are skipped. It is a reader for error messages, not a parser: keys
// it cannot place are reported at their table's line.
func indexLines(src string) map[string]int {
	out := map[string]int{}
	table := ""
	inMulti := ""
	for i, line := range strings.Split(src, "\n") {
		n := i + 1
		t := strings.TrimSpace(line)
		if inMulti != "" {
			if strings.Contains(t, inMulti) {
				inMulti = ""
			}
			continue
		}
		switch {
		case t == "" || strings.HasPrefix(t, "#"):
			continue
		case strings.HasPrefix(t, "["):
			h := strings.Trim(strings.SplitN(t, "#", 2)[0], "[] \t")
			table = unquoteKey(h)
			if _, ok := out[table]; !ok {
				out[table] = n
			}
			continue
		}
		k, rest, ok := strings.Cut(t, "=")
		if !ok {
			continue
		}
		key := unquoteKey(strings.TrimSpace(k))
		if table != "" {
			key = table + "." + key
		}
		if _, ok := out[key]; !ok {
			out[key] = n
		}
		rest = strings.TrimSpace(rest)
		for _, q := range []string{`"""`, `'''`} {
			if strings.HasPrefix(rest, q) && !strings.Contains(rest[3:], q) {
				inMulti = q
			}
		}
	}
	return out
}

func unquoteKey(k string) string {
	parts := strings.Split(k, ".")
	for i, p := range parts {
		parts[i] = strings.Trim(strings.TrimSpace(p), `"'`)
	}
	return strings.Join(parts, ".")
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// suggest returns `: did you mean "x"?` for the closest of names, or "".
func suggest(s string, names []string) string {
	best, bestD := "", 3
	for _, n := range names {
		if d := distance(s, n); d < bestD {
			best, bestD = n, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

// distance is the Levenshtein distance of a and b.
func distance(a, b string) int {
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
