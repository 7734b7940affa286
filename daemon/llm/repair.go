package llm

import (
	"encoding/json"
	"strings"
)

// maxRepairStarts bounds how many '{' Repair tries as the start of an object, so that
// adversarial input ("{{{{…") costs linear time, not quadratic.
const maxRepairStarts = 16

// Repair digs the reply out of text from a model or server that ignored `format`: it prefers
// the inside of the first ``` fence holding a '{', takes the first balanced top-level JSON
// object there (braces inside strings and escapes do not count), and removes trailing commas
// before } or ]. Among several top-level balanced candidates it returns the first that is
// valid JSON, else the first one, so that the caller's parser can say what is wrong with it. ok is false when there is no balanced object at all.
// Repair never panics and runs in linear time.
func Repair(content string) (string, bool) {
	text := content
	if inner, found := fenced(content); found {
		text = inner
	}
	first, found := "", false
	start, tries := 0, 0
	for tries < maxRepairStarts {
		i := strings.IndexByte(text[start:], '{')
		if i < 0 {
			break
		}
		start += i
		tries++
		end := objectEnd(text, start)
		if end < 0 {
			start++
			continue
		}
		cand := dropTrailingCommas(text[start:end])
		if json.Valid([]byte(cand)) {
			return cand, true
		}
		if !found {
			first, found = cand, true
		}
		start = end // objects nested in an invalid one are not the reply
	}
	return first, found
}

// fenced returns the body of the first markdown code fence that contains a '{'. An
// unclosed fence (a reply cut off mid-way) runs to the end of the text.
func fenced(s string) (string, bool) {
	for {
		i := strings.Index(s, "```")
		if i < 0 {
			return "", false
		}
		body := s[i+3:]
		// Skip the info string ("json") up to the end of the fence line.
		if nl := strings.IndexByte(body, '\n'); nl >= 0 && !strings.Contains(body[:nl], "{") {
			body = body[nl+1:]
		}
		rest := ""
		if j := strings.Index(body, "```"); j >= 0 {
			body, rest = body[:j], body[j+3:]
		}
		if strings.Contains(body, "{") {
			return body, true
		}
		if rest == "" {
			return "", false
		}
		s = rest
	}
}

// strScan tracks whether a byte-by-byte walk over JSON text is inside a string.
type strScan struct{ inStr, esc bool }

// structural reports whether ch, the next byte, is outside any string and not a quote:
// a byte that can be JSON structure.
func (sc *strScan) structural(ch byte) bool {
	switch {
	case sc.inStr && sc.esc:
		sc.esc = false
	case sc.inStr && ch == '\\':
		sc.esc = true
	case sc.inStr && ch == '"':
		sc.inStr = false
	case sc.inStr:
	case ch == '"':
		sc.inStr = true
	default:
		return true
	}
	return false
}

// objectEnd returns the index just past the object that opens at s[start], or -1 if it
// never closes or a closer does not match its opener. Only JSON's double-quoted strings
// are recognized.
func objectEnd(s string, start int) int {
	var open []byte // the expected closers, innermost last
	var sc strScan
	for i := start; i < len(s); i++ {
		ch := s[i]
		if !sc.structural(ch) {
			continue
		}
		switch ch {
		case '{':
			open = append(open, '}')
		case '[':
			open = append(open, ']')
		case '}', ']':
			if open[len(open)-1] != ch {
				return -1
			}
			open = open[:len(open)-1]
			if len(open) == 0 {
				return i + 1
			}
		}
	}
	return -1
}

// dropTrailingCommas removes each comma that, outside strings, is followed only by
// whitespace and then } or ].
func dropTrailingCommas(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	var sc strScan
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if sc.structural(ch) && ch == ',' {
			j := i + 1
			for j < len(s) && strings.IndexByte(" \t\r\n", s[j]) >= 0 {
				j++
			}
			if j < len(s) && (s[j] == '}' || s[j] == ']') {
				continue
			}
		}
		b.WriteByte(ch)
	}
	return b.String()
}
