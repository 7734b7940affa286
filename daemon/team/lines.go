package team

import (
	"maps"
	"slices"
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

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
