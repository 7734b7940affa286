package bots

import "testing"

// A reply is bound to the waiting proposal only when the proposal's message
// orders strictly before it.
func TestDecimalBeforeOrdersStrictly(t *testing.T) {
	cases := []struct {
		a, b string
		want bool
	}{
		{"1712345678.0002", "1712345678.000200", false}, // equal with fewer fraction digits
		{"1712345678.000200", "1712345678.0002", false},
		{"1712345678.0002", "1712345678.000201", true},
		{"1712345678.00021", "1712345678.000201", false},
		{"999", "1000", true}, {"1000", "999", false}, // different lengths
		{"0001000", "999", false}, {"999", "0001000", true},
		{"5", "5", false}, {"5.", "5", false}, {"5", "5.0", false},
		{"T1/100", "T2/100", false}, {"T1/100", "T2/101", true},
		{"", "1", false}, {"1", "", false}, {".5", "1", false}, {"1", "1.5.0", false},
		{"+1", "2", false}, {"1e3", "2000", false}, {"１", "2", false}, {"-1", "0", false},
		{"1/", "2", false}, {"1", "2/", false}, {"0", "0.1", true}, {"00", "0.1", true},
	}
	for _, c := range cases {
		if got := DecimalBefore(c.a, c.b); got != c.want {
			t.Errorf("DecimalBefore(%q, %q) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}
