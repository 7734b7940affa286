package display

import "unicode/utf8"

// Ellipsis is the marker most callers put where Cut shortened a text.
const Ellipsis = "…"

// Cut shortens s to at most max bytes and appends marker when it did; s is returned as is
// when it fits. The unit is bytes because the limits callers keep are byte limits (chat
// message caps, API caps, model context budgets). The cut never splits a UTF-8 character:
// it stops at the last character boundary at or before max, so the kept part may be up to
// three bytes shorter. The result is at most max+len(marker) bytes; a caller that must
// fit the marker inside its cap passes max-len(marker). max ≤ 0 keeps nothing but the
// marker (for a non-empty s).
func Cut(s string, max int, marker string) string {
	if len(s) <= max {
		return s
	}
	i := max
	if i < 0 {
		i = 0
	}
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + marker
}
