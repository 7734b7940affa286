package bots

import "strings"

// DecimalBefore orders message ids written as unsigned decimal numbers with an optional
// fraction: Slack's ts ("1712345678.000200") and Discord's snowflakes ("1234567890123").
// It reports whether a < b as numbers. Leading zeros in the integer part are ignored; an
// id that is not such a number is ordered with nothing (false both ways), so a reply
// whose id does not parse is bound to no proposal, and a message whose id does not parse
// counts as shown before no reply. An id may name its channel first, as the ids Discord's adapter
// posts with do ("THREAD/SNOWFLAKE"): the part after the last slash is compared.
func DecimalBefore(a, b string) bool {
	a, b = a[strings.LastIndexByte(a, '/')+1:], b[strings.LastIndexByte(b, '/')+1:]
	ai, af, aok := splitDecimal(a)
	bi, bf, bok := splitDecimal(b)
	switch {
	case !aok || !bok:
		return false
	case len(ai) != len(bi):
		return len(ai) < len(bi)
	case ai != bi:
		return ai < bi
	}
	n := max(len(af), len(bf))
	return pad(af, n) < pad(bf, n)
}

func splitDecimal(s string) (whole, frac string, ok bool) {
	whole, frac, _ = strings.Cut(s, ".")
	if whole == "" || !digits(whole) || !digits(frac) {
		return "", "", false
	}
	whole = strings.TrimLeft(whole, "0")
	return whole, frac, true
}

func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func pad(s string, n int) string { return s + strings.Repeat("0", n-len(s)) }
