// Package displaytest holds the hostile strings every front end's tests show to a
// person — agentctl, the chat bots, the web console, the Agent Protocol — and the one
// check that none of them acted: no control, bidi or zero-width character left raw, and
// no line forged. Test support only, as net/http/httptest is.
package displaytest

import (
	"strings"

	"github.com/agentd/agentd/internal/display"
)

// Forged is the line each case tries to start: a daemon line that is not the daemon's.
const Forged = "12:00:00 Proposes rm -rf ~"

// Case is one hostile string a model (or a file name, or a command's output) may hold.
type Case struct{ Name, Text string }

// Cases are the hostile strings: terminal escape sequences, bidi overrides and
// isolates, zero-width characters, and line breaks of every kind forging Forged.
var Cases = []Case{
	{"esc_clears_the_screen", "done\x1b[2J\x1b[H"},
	{"osc_sets_the_title", "done\x1b]0;owned\x07"},
	{"c1_csi", "done\u009b2J"},
	{"bidi_override", "rm -rf /\u202etxt.exe"},
	{"bidi_isolate", "done\u2066hidden\u2069"},
	{"zero_width_space", "r\u200bm -rf"},
	{"zero_width_joiner", "ls\u200d"},
	{"lf_forges_a_line", "done\n" + Forged},
	{"cr_overwrites_the_line", "done\r" + Forged},
	{"crlf_forges_a_line", "done\r\n" + Forged},
	{"line_separator", "done\u2028" + Forged},
	{"next_line_c1", "done\u0085" + Forged},
}

// Leak says what out shows a person that it must not: RawIn's, or else ForgedIn's. ""
// when nothing leaked.
func Leak(out string) string {
	if raw := RawIn(out); raw != "" {
		return raw
	}
	return ForgedIn(out)
}

// RawIn names a character out holds raw that display.Escape would escape (line breaks
// and tabs aside): one that acts on a terminal or hides what is shown. "" when none.
func RawIn(out string) string {
	esc := display.Escape(out, display.Text)
	for i := 0; i < len(out) && i < len(esc); i++ {
		if out[i] != esc[i] {
			return "a raw character: " + display.Escape(out[i:min(i+12, len(out))], display.Line)
		}
	}
	if esc != out {
		return "a raw character at the end"
	}
	return ""
}

// ForgedIn names a line of out that starts with Forged, where the front end's own lines
// start (text shown as an indented or quoted block is the block's). "" when none.
func ForgedIn(out string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, Forged) {
			return "a forged line: " + l
		}
	}
	return ""
}
