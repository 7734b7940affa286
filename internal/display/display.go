// Package display makes text safe to show to a person. Model output, command output and
// file names reach terminals (agentctl), chat messages (Slack, Discord) and logs; Escape
// is the one function every such place calls, so a control sequence, a bidi override or
// an invisible character is shown as an escape (\x1b, \u202e, \xff) instead of acting.
//
// It is a leaf: the standard library only, so agentctl, the bots, the commands and the
// daemon may all import it.
package display

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Mode says which line breaks pass through and how escapes are written.
type Mode uint8

const (
	// Line is for text shown on one line (a name, a table cell, a command): \n and \t
	// are escaped like every other control character.
	Line Mode = iota
	// Text is for multi-line text (a result, a message): \n and \t pass.
	Text
	// JSON is for encoded JSON shown to a person: \n and \t pass (indentation) and every
	// escape is JSON's \uXXXX form, so the document stays valid and decodes to the same
	// value.
	JSON
)

// Escape returns s with every character that is not plainly visible written as an escape:
// C0 controls and DEL (\x1b), C1 controls, bidi controls, zero-width and other format
// characters, line and paragraph separators, spaces other than U+0020, invisible fillers
// and stray variation selectors (\u202e, \U000e0041), combining marks past the fourth on one
// letter (\u0301), and bytes that are not UTF-8 (\xff).
// Backslashes are left alone, so Escape applied twice changes nothing more.
func Escape(s string, m Mode) string {
	i := firstUnsafe(s, m)
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	b.WriteString(s[:i])
	prev, marks := rune(-1), markRun(s[:i])
	if i > 0 {
		prev, _ = utf8.DecodeLastRuneInString(s[:i])
	}
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		marks = countMark(marks, r)
		switch {
		case r == utf8.RuneError && size <= 1:
			writeByte(&b, s[i], m)
		case unsafe(r, prev, m) || marks > maxMarks:
			writeRune(&b, r, m)
		default:
			b.WriteString(s[i : i+size])
		}
		prev = r
		i += size
	}
	return b.String()
}

// firstUnsafe returns the index of the first byte Escape must rewrite, or -1.
func firstUnsafe(s string, m Mode) int {
	prev, marks := rune(-1), 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 && !(m != Line && (c == '\n' || c == '\t')) || c == 0x7f {
				return i
			}
			prev, marks = rune(c), 0
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		marks = countMark(marks, r)
		if r == utf8.RuneError && size <= 1 || unsafe(r, prev, m) || marks > maxMarks {
			return i
		}
		prev = r
		i += size
	}
	return -1
}

// maxMarks is how many combining marks in a row are shown as they are: more than any
// script stacks on one letter, fewer than it takes to draw over the lines around (Zalgo).
const maxMarks = 4

// countMark returns the length of the run of combining marks r extends, 0 if r is none.
func countMark(run int, r rune) int {
	if unicode.In(r, unicode.Mn, unicode.Me) {
		return run + 1
	}
	return 0
}

// markRun returns how many combining marks s ends with.
func markRun(s string) int {
	n := 0
	for len(s) > 0 {
		r, size := utf8.DecodeLastRuneInString(s)
		if !unicode.In(r, unicode.Mn, unicode.Me) {
			break
		}
		n, s = n+1, s[:len(s)-size]
	}
	return n
}

// unsafe reports whether r, following prev, must be escaped.
func unsafe(r, prev rune, m Mode) bool {
	switch {
	case r == '\n' || r == '\t':
		return m == Line
	case r < 0x20 || r == 0x7f:
		return true
	case r < utf8.RuneSelf:
		return false
	case r == 0xfe0e || r == 0xfe0f:
		// Text or emoji presentation: harmless after one visible character, a carrier
		// of hidden data when chained.
		return prev < 0x20 || isVariationSelector(prev) || invisible(prev)
	}
	return invisible(r) || isVariationSelector(r)
}

// invisible reports whether r is a control, format (bidi, zero-width, tags), separator
// or blank character that a person cannot see for what it is.
func invisible(r rune) bool {
	switch r {
	case 0x034f, // combining grapheme joiner
		0x115f, 0x1160, 0x3164, 0xffa0, // Hangul fillers: letters that draw nothing
		0x17b4, 0x17b5, // Khmer inherent vowels
		0x2800,                 // braille blank
		0xfff9, 0xfffa, 0xfffb, // interlinear annotation
		0xfffc: // object replacement
		return true
	}
	// Everything else that is not a letter, mark, number, punctuation or symbol: controls,
	// formats, separators, spaces but U+0020, private use and unassigned code points.
	return !unicode.IsPrint(r)
}

func isVariationSelector(r rune) bool {
	return r >= 0xfe00 && r <= 0xfe0f || r >= 0xe0100 && r <= 0xe01ef || r >= 0x180b && r <= 0x180f
}

func writeByte(b *strings.Builder, c byte, m Mode) {
	if m == JSON {
		b.WriteString(`\ufffd`) // the JSON decoder would make the same replacement
		return
	}
	writeHex(b, `\x`, uint32(c), 2)
}

func writeRune(b *strings.Builder, r rune, m Mode) {
	switch {
	case m == JSON && r > 0xffff:
		r1, r2 := utf16Pair(r)
		writeHex(b, `\u`, uint32(r1), 4)
		writeHex(b, `\u`, uint32(r2), 4)
	case m == JSON || r >= utf8.RuneSelf && r <= 0xffff:
		writeHex(b, `\u`, uint32(r), 4)
	case r < utf8.RuneSelf:
		writeHex(b, `\x`, uint32(r), 2)
	default:
		writeHex(b, `\U`, uint32(r), 8)
	}
}

// writeHex writes prefix, then v in the given number of lowercase hex digits.
func writeHex(b *strings.Builder, prefix string, v uint32, digits int) {
	const hex = "0123456789abcdef"
	b.WriteString(prefix)
	for i := digits - 1; i >= 0; i-- {
		b.WriteByte(hex[v>>(4*i)&0xf])
	}
}

func utf16Pair(r rune) (rune, rune) {
	r -= 0x10000
	return 0xd800 + (r>>10)&0x3ff, 0xdc00 + r&0x3ff
}
