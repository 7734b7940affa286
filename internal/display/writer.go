package display

import (
	"io"
	"log/slog"
	"unicode/utf8"
)

// Writer passes everything written to it through Escape. A character split across two
// writes is held back until its rest arrives; Flush writes out whatever is held.
type Writer struct {
	w    io.Writer
	m    Mode
	held []byte // the start of a UTF-8 sequence the last write ended in
}

// NewWriter returns a Writer escaping in mode m onto w.
func NewWriter(w io.Writer, m Mode) *Writer { return &Writer{w: w, m: m} }

// Write escapes p and writes it; it reports len(p) when the escaped text was written.
func (w *Writer) Write(p []byte) (int, error) {
	buf := append(w.held, p...)
	w.held = nil
	if tail := incompleteTail(buf); tail > 0 {
		w.held = append([]byte(nil), buf[len(buf)-tail:]...)
		buf = buf[:len(buf)-tail]
	}
	if _, err := io.WriteString(w.w, Escape(string(buf), w.m)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush writes what is held back (escaped: it was never completed).
func (w *Writer) Flush() error {
	if len(w.held) == 0 {
		return nil
	}
	held := w.held
	w.held = nil
	_, err := io.WriteString(w.w, Escape(string(held), w.m))
	return err
}

// incompleteTail returns how many bytes at the end of b start a UTF-8 sequence that is
// not finished yet (0 when b ends on a whole character or on bytes that are invalid anyway).
func incompleteTail(b []byte) int {
	for n := 1; n <= utf8.UTFMax-1 && n <= len(b); n++ {
		c := b[len(b)-n]
		if utf8.RuneStart(c) {
			if c >= 0xc0 && !utf8.FullRune(b[len(b)-n:]) {
				return n
			}
			return 0
		}
	}
	return 0
}

// ReplaceAttr is a slog.HandlerOptions.ReplaceAttr that escapes every string a record
// carries (its message, string values, lists of strings, errors and Stringers), so a
// command name, a model's text or a file name cannot forge or hide log lines.
func ReplaceAttr(_ []string, a slog.Attr) slog.Attr {
	v := a.Value
	switch v.Kind() {
	case slog.KindString:
		if s := v.String(); firstUnsafe(s, Text) >= 0 {
			a.Value = slog.StringValue(Escape(s, Text))
		}
	case slog.KindAny:
		var s string
		switch x := v.Any().(type) {
		case error:
			s = x.Error()
		case interface{ String() string }:
			s = x.String()
		case []string:
			out := make([]string, len(x))
			for i, e := range x {
				out[i] = Escape(e, Text)
			}
			a.Value = slog.AnyValue(out)
			return a
		default:
			return a
		}
		if firstUnsafe(s, Text) >= 0 {
			a.Value = slog.StringValue(Escape(s, Text))
		}
	}
	return a
}
