package bots

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestFitKeepsEscapesWhole(t *testing.T) {
	runes := func(s string) int { return utf8.RuneCountInString(s) }
	for _, c := range []struct {
		name, text string
		limit      int
		length     func(string) int
		want       string
	}{
		{"short", "a &amp; b", 100, nil, "a &amp; b"},
		{"entity", "aaaa&amp;bbbb", 11, nil, "aaaa"},
		{"entity kept", "aaaa&amp;bbbbbbbb", 14, nil, "aaaa&amp;b"},
		{"backslash", `aaaa\*bbbbbbbb`, 9, nil, "aaaa"},
		{"mention", "hi <@U123|bob> there friend", 13, nil, "hi "},
		{"rune", "ééééé", 9, nil, "éé"},
		{"rune count", "éééééééééééé", 9, runes, "ééééé"},
		{"line", "line one\nline two is longer", 24, nil, "line one\nline two is"},
		{"prefer newline", "aaaaaaaaaaaaaaaaaa\nbbbbbbbbbb", 25, nil, "aaaaaaaaaaaaaaaaaa"},
		{"fence", "```\ncode code code code\n```", 20, nil, "```\ncode code co\n```"},
	} {
		got, cut := Fit(c.text, c.limit, c.length)
		if got != c.want || cut != (c.want != c.text) {
			t.Errorf("%s: Fit(%q, %d) = %q, %v; want %q", c.name, c.text, c.limit, got, cut, c.want)
		}
		l := c.length
		if l == nil {
			l = func(s string) int { return len(s) }
		}
		if l(got) > c.limit {
			t.Errorf("%s: %q is over the limit %d", c.name, got, c.limit)
		}
	}
}

func FuzzFit(f *testing.F) {
	f.Add("a &amp; b &lt;x&gt; ```code``` <@U1> \\* é", 20)
	f.Fuzz(func(t *testing.T, s string, limit int) {
		if limit < 0 || limit > 1<<16 {
			return
		}
		got, cut := Fit(s, limit, nil)
		if !cut {
			if got != s {
				t.Fatalf("not cut but changed: %q", got)
			}
			return
		}
		if len(got) > limit {
			t.Fatalf("Fit(%q, %d) = %q: over the limit", s, limit, got)
		}
		base := strings.TrimSuffix(got, "\n```")
		if !strings.HasPrefix(s, base) {
			t.Fatalf("Fit(%q, %d) = %q: not a prefix", s, limit, got)
		}
		if utf8.ValidString(s) && !utf8.ValidString(got) {
			t.Fatalf("Fit(%q, %d) = %q: split a character", s, limit, got)
		}
		if strings.Count(got, "```")%2 == 1 {
			t.Fatalf("Fit(%q, %d) = %q: open fence", s, limit, got)
		}
	})
}
