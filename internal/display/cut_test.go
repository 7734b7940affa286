package display

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCut(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		max    int
		marker string
		want   string
	}{
		{"fits", "hello", 5, Ellipsis, "hello"},
		{"ascii_cut", "hello world", 5, Ellipsis, "hello…"},
		{"empty", "", 3, Ellipsis, ""},
		{"empty_max_zero", "", 0, Ellipsis, ""},
		{"max_zero", "abc", 0, Ellipsis, "…"},
		{"max_negative", "abc", -4, "[cut]", "[cut]"},
		{"max_smaller_than_marker", "abcdef", 2, " (more)", "ab (more)"},
		{"no_marker", "abcdef", 3, "", "abc"},
		{"two_byte_at_boundary", "aé", 2, Ellipsis, "a…"},
		{"two_byte_fits_exactly", "aéb", 3, Ellipsis, "aé…"},
		{"four_byte_at_boundary", "ab👍cd", 4, Ellipsis, "ab…"},
		{"four_byte_before_max", "ab👍cd", 6, Ellipsis, "ab👍…"},
		{"only_multibyte", strings.Repeat("é", 10), 5, Ellipsis, "éé…"},
		{"multibyte_smaller_than_rune", "日本", 2, Ellipsis, "…"},
		{"invalid_utf8_kept_bytewise", "a\xff\xfeb", 2, Ellipsis, "a\xff…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Cut(tt.in, tt.max, tt.marker)
			if got != tt.want {
				t.Errorf("Cut(%q, %d, %q) = %q, want %q", tt.in, tt.max, tt.marker, got, tt.want)
			}
			if kept := strings.TrimSuffix(got, tt.marker); len(kept) > max(tt.max, 0) && got != tt.in {
				t.Errorf("Cut kept %d bytes, over max %d", len(kept), tt.max)
			}
			if utf8.ValidString(tt.in) && !utf8.ValidString(got) {
				t.Errorf("Cut(%q) = %q split a UTF-8 character", tt.in, got)
			}
		})
	}
}

func TestCount(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want string
	}{{0, "0 proposals"}, {1, "1 proposal"}, {2, "2 proposals"}} {
		if got := Count(tc.n, "proposal", "proposals"); got != tc.want {
			t.Errorf("Count(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}

func TestClosest(t *testing.T) {
	names := []string{"researcher", "scribe", "walker"}
	for _, tc := range []struct{ in, want string }{
		{"walkr", "walker"}, {"scibe", "scribe"}, {"researchr", "researcher"}, {"nobody", ""}, {"x", ""},
	} {
		if got := Closest(tc.in, names); got != tc.want {
			t.Errorf("Closest(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if got := DidYouMean("walkr", names); got != ` (did you mean "walker"?)` {
		t.Errorf("DidYouMean = %q", got)
	}
}
