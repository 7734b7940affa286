package display

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestEscape(t *testing.T) {
	tests := []struct {
		name string
		in   string
		mode Mode
		want string
	}{
		{"plain_ascii", "ls -la ./src", Line, "ls -la ./src"},
		{"accents_cjk_emoji", "café 日本 ✅ 👍🏽", Line, "café 日本 ✅ 👍🏽"},
		{"combining_marks", "e\u0301 अ\u093e", Line, "e\u0301 अ\u093e"},
		{"four_marks_on_one_letter", "a\u0301\u0302\u0303\u0304 b", Line, "a\u0301\u0302\u0303\u0304 b"},
		{"zalgo_marks_past_the_fourth", "Z\u0300\u0301\u0302\u0303\u0304\u0305\u0306a", Text, "Z\u0300\u0301\u0302\u0303" + `\u0304\u0305\u0306` + "a"},
		{"zalgo_run_reset_by_a_letter", "x\u0300\u0300\u0300\u0300y\u0300\u0300\u0300\u0300\u0300", Line, "x\u0300\u0300\u0300\u0300y\u0300\u0300\u0300\u0300" + `\u0300`},
		{"enclosing_marks_stacked", "1\u20dd\u20dd\u20dd\u20dd\u20dd", Line, "1\u20dd\u20dd\u20dd\u20dd" + `\u20dd`},
		{"backslash_untouched", `C:\x1b \u202e`, Line, `C:\x1b \u202e`},
		{"escape_sequence", "red\x1b[31m", Text, `red\x1b[31m`},
		{"nul_bell_backspace", "a\x00b\x07c\x08", Text, `a\x00b\x07c\x08`},
		{"carriage_return", "ok\rfake", Text, `ok\x0dfake`},
		{"newline_tab_in_text", "a\n\tb", Text, "a\n\tb"},
		{"newline_tab_in_line", "a\n\tb", Line, `a\x0a\x09b`},
		{"del", "a\x7fb", Text, `a\x7fb`},
		{"c1_csi", "a\u009b2Jb", Text, `a\u009b2Jb`},
		{"c1_nel", "a\u0085b", Text, `a\u0085b`},
		{"bidi_rlo", "file\u202etxt.exe", Line, `file\u202etxt.exe`},
		{"bidi_embeddings", "\u202a\u202b\u202c\u202d", Line, `\u202a\u202b\u202c\u202d`},
		{"bidi_isolates", "\u2066\u2067\u2068\u2069", Line, `\u2066\u2067\u2068\u2069`},
		{"bidi_marks", "\u200e\u200f\u061c", Line, `\u200e\u200f\u061c`},
		{"zero_width", "r\u200bm \u200c\u200d", Line, `r\u200bm \u200c\u200d`},
		{"word_joiner_invisible_ops", "\u2060\u2061\u2062\u2063\u2064", Line, `\u2060\u2061\u2062\u2063\u2064`},
		{"bom_soft_hyphen_mongolian", "\ufeff\u00ad\u180e", Line, `\ufeff\u00ad\u180e`},
		{"line_paragraph_separators", "a\u2028b\u2029c", Text, `a\u2028b\u2029c`},
		{"tag_characters", "hi\U000E0041\U000E007F", Line, `hi\U000e0041\U000e007f`},
		{"odd_spaces", "rm\u00a0-rf\u2003/\u3000", Line, `rm\u00a0-rf\u2003/\u3000`},
		{"hangul_filler_cgj", "\u3164\u115f\u034f", Line, `\u3164\u115f\u034f`},
		{"private_use", "\ue000", Line, `\ue000`},
		{"emoji_presentation_kept", "❤\ufe0f ok", Line, "❤\ufe0f ok"},
		{"variation_selector_chain", "❤\ufe0f\ufe0f", Line, `❤` + "\ufe0f" + `\ufe0f`},
		{"variation_selector_supplement", "a\U000E0100\U000E01EF", Line, `a\U000e0100\U000e01ef`},
		{"leading_variation_selector", "\ufe0fx", Line, `\ufe0fx`},
		{"invalid_utf8", "a\xffb\xc3", Line, `a\xffb\xc3`},
		{"surrogate_bytes", "\xed\xa0\x80", Line, `\xed\xa0\x80`},
		{"replacement_char_kept", "\ufffd", Line, "\ufffd"},
		{"json_mode_forms", "\x7f\u202e\U000E0041\xff\n", JSON, `\u007f\u202e\udb40\udc41\ufffd` + "\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Escape(tc.in, tc.mode)
			if got != tc.want {
				t.Fatalf("Escape(%q) = %q, want %q", tc.in, got, tc.want)
			}
			if again := Escape(got, tc.mode); again != got {
				t.Errorf("escaping twice changed %q to %q", got, again)
			}
		})
	}
}

// TestEscapeJSONStaysValid checks that JSON mode keeps an encoded document decodable to
// the same value (agentctl --json goes through it).
func TestEscapeJSONStaysValid(t *testing.T) {
	in := map[string]string{"v": "a\x7fb\u202ec\u200b\U000E0041\u0085d"}
	b, _ := json.MarshalIndent(in, "", "  ")
	esc := Escape(string(b), JSON)
	for _, r := range esc {
		if r > 0x7e {
			t.Fatalf("JSON escape left %U in %s", r, esc)
		}
	}
	var out map[string]string
	if err := json.Unmarshal([]byte(esc), &out); err != nil {
		t.Fatalf("escaped JSON does not decode: %v\n%s", err, esc)
	}
	if out["v"] != in["v"] {
		t.Fatalf("decoded %q, want %q", out["v"], in["v"])
	}
}

func TestWriterJoinsSplitCharacters(t *testing.T) {
	var b bytes.Buffer
	w := NewWriter(&b, Text)
	s := "é\u202e日\x1b"
	for i := 0; i < len(s); i++ {
		w.Write([]byte{s[i]})
	}
	w.Write([]byte{0xe6}) // a character started and never finished
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if got, want := b.String(), `é\u202e日\x1b\xe6`; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestReplaceAttrEscapesLogs(t *testing.T) {
	for _, format := range []string{"text", "json"} {
		t.Run(format, func(t *testing.T) {
			var b bytes.Buffer
			opts := &slog.HandlerOptions{ReplaceAttr: ReplaceAttr}
			var h slog.Handler = slog.NewTextHandler(&b, opts)
			if format == "json" {
				h = slog.NewJSONHandler(&b, opts)
			}
			log := slog.New(h).With("agent", "bob\u202e")
			log.Info("ran \x1b[2J", "command", "ls\u200b", "err", errString("no\u2066pe"), "n", 3,
				"args", []string{"a\u202e"})
			out := b.String()
			for _, bad := range []string{"\x1b", "\u202e", "\u200b", "\u2066"} {
				if strings.Contains(out, bad) {
					t.Errorf("log line keeps %q raw: %s", bad, out)
				}
			}
			for _, want := range []string{`x1b[2J`, `u202e`, `u200b`, `u2066`, "n=3"} {
				if format == "json" && want == "n=3" {
					want = `"n":3`
				}
				if !strings.Contains(out, want) {
					t.Errorf("log line lacks %q: %s", want, out)
				}
			}
		})
	}
}

type errString string

func (e errString) Error() string { return string(e) }

// BenchmarkEscape measures the common case (nothing to escape: no allocation) and text
// full of escapes.
func BenchmarkEscape(b *testing.B) {
	clean := strings.Repeat("a result line with ünïcode and ✅ emoji\n", 32)
	hostile := strings.Repeat("a\u202eb\x1b[2Jc\u200bd\xff\n", 64)
	b.Run("clean_1k", func(b *testing.B) {
		for b.Loop() {
			Escape(clean, Text)
		}
	})
	b.Run("hostile_1k", func(b *testing.B) {
		for b.Loop() {
			Escape(hostile, Text)
		}
	})
}

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

func TestSize(t *testing.T) {
	for n, want := range map[int64]string{0: "0 bytes", 1023: "1023 bytes", 1024: "1 KiB", 2 << 30: "2 GiB", 3 << 29: "1.5 GiB", 10<<30 + 1: "10.0 GiB"} {
		if got := Size(n); got != want {
			t.Errorf("Size(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "4096": 4096, "2GiB": 2 << 30, "2 GiB": 2 << 30, "1.5G": 3 << 29,
		"512MiB": 512 << 20, "512m": 512 << 20, "10GB": 10e9, "64 kib": 64 << 10, " 1 TiB ": 1 << 40} {
		got, err := ParseSize(in)
		if err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "GiB", "2 gigs", "-1GiB", "1e3", "2..5G", "9999999999TiB"} {
		if got, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q) = %d, want an error", in, got)
		}
	}
}
