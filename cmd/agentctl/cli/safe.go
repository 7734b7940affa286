package cli

import (
	"fmt"
	"io"
)

// safeWriter shows control characters as escapes, so text a model wrote (a proposal's
// args, a result) cannot move the cursor, clear the screen or retitle the terminal.
// Newlines and tabs pass; JSON output needs no such care (encoding/json escapes them).
type safeWriter struct{ w io.Writer }

func (s safeWriter) Write(p []byte) (int, error) {
	clean := true
	for i, b := range p {
		if unsafeAt(p, i, b) {
			clean = false
			break
		}
	}
	if clean {
		return s.w.Write(p)
	}
	out := make([]byte, 0, len(p)+16)
	for i := 0; i < len(p); i++ {
		b := p[i]
		switch {
		case b == 0xC2 && i+1 < len(p) && p[i+1] >= 0x80 && p[i+1] <= 0x9F: // C1 controls
			out = fmt.Appendf(out, `\u%04x`, p[i+1])
			i++
		case unsafeAt(p, i, b):
			out = fmt.Appendf(out, `\x%02x`, b)
		default:
			out = append(out, b)
		}
	}
	if _, err := s.w.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

func unsafeAt(p []byte, i int, b byte) bool {
	if b == '\n' || b == '\t' {
		return false
	}
	if b < 0x20 || b == 0x7F {
		return true
	}
	return b == 0xC2 && i+1 < len(p) && p[i+1] >= 0x80 && p[i+1] <= 0x9F
}
