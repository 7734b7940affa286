package bots

import (
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// UTF16Len counts s in UTF-16 code units, as Slack's and Discord's limits do: the
// reading that never overflows (an emoji counts twice, never below its code points).
func UTF16Len(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}

// Fit cuts text that is already escaped for its platform to at most limit, as measured
// by length (nil counts bytes), on a boundary that keeps the rest intact: never inside a
// UTF-8 character, an HTML entity (&amp;), a backslash escape (\*) or a <…> token (a
// Slack link or mention), preferring the end of a line near the limit. A ``` fence left
// open by the cut is closed. It reports whether it cut; the caller then says so visibly
// ("truncated — full text attached") and attaches the full text, so nothing is lost
// silently. Limits must be applied to the final text, which is why Fit takes it escaped.
func Fit(text string, limit int, length func(string) int) (string, bool) {
	if length == nil {
		length = func(s string) int { return len(s) }
	}
	if length(text) <= limit {
		return text, false
	}
	const closer = "\n```"
	budget := limit - length(closer) // room for a closing fence, should one be needed
	if budget <= 0 {
		return "", true
	}
	// The longest prefix within budget: binary search over byte offsets (length is
	// monotonic in the prefix).
	lo, hi := 0, len(text)
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if length(text[:mid]) <= budget {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	i := lo
	for i > 0 && !safeCut(text, i) {
		i--
	}
	// A line end within the last fifth reads better than a cut mid-line.
	if nl := strings.LastIndexByte(text[:i], '\n'); nl > 0 && nl >= i-i/5 {
		i = nl
	}
	out := text[:i]
	if strings.Count(out, "```")%2 == 1 {
		out += closer
	}
	return out, true
}

// safeCut reports whether text may be cut before byte i.
func safeCut(text string, i int) bool {
	if i >= len(text) {
		return true
	}
	if !utf8.RuneStart(text[i]) {
		return false
	}
	// An odd run of backslashes before i would escape whatever follows the cut.
	n := 0
	for j := i - 1; j >= 0 && text[j] == '\\'; j-- {
		n++
	}
	if n%2 == 1 {
		return false
	}
	return !inside(text, i, '&', ';', 12, isEntityByte) && !inside(text, i, '<', '>', 200, func(byte) bool { return true })
}

// inside reports whether i falls within an open…close token that starts at most span
// bytes before i, whose bytes between satisfy ok and which is closed after i.
func inside(text string, i int, open, close byte, span int, ok func(byte) bool) bool {
	for j := i - 1; j >= 0 && j >= i-span; j-- {
		c := text[j]
		if c == close {
			return false
		}
		if c == open {
			for k := i; k < len(text) && k < j+span; k++ {
				switch {
				case text[k] == close:
					return true
				case text[k] == open || !ok(text[k]):
					return false
				}
			}
			return false
		}
		if !ok(c) {
			return false
		}
	}
	return false
}

func isEntityByte(c byte) bool {
	return c == '#' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}
