package bots

import "testing"

func TestDecimalBefore(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{"1712345678.000100", "1712345678.000200", true},
		{"1712345678.000200", "1712345678.000100", false},
		{"1712345678.000100", "1712345678.000100", false},
		{"999.9", "1000.0", true},
		{"1712345678.000600", "1712345678.5", true}, // "5" reads as .500000
		{"1234567890123456789", "1234567890123456790", true},
		{"99", "100", true},
		{"0100", "99", false},
		{"100", "x", false}, // a malformed id is ordered with nothing: no reply binds by it

		{"x", "100", false},
		{"", "1", false},
		{"1.2.3", "5", false},
		{"300/1234567890123456789", "1234567890123456790", true}, // a posted message's id names its thread
		{"1234567890123456790", "300/1234567890123456789", false},
		{"300/", "1", false},
	} {
		if got := DecimalBefore(c.a, c.b); got != c.want {
			t.Errorf("DecimalBefore(%q, %q) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}
