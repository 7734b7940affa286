package web

import (
	"net/http/httptest"
	"testing"
)

// Model text in an SSE fragment cannot end the message or forge an id/event field.
func TestWriteSSECannotForgeFields(t *testing.T) {
	rec := httptest.NewRecorder()
	writeSSE(rec, "event", 7, "a\r\nid: 999\revent: reload\n\ndata: x\r\rretry: 1")
	for _, l := range splitSSE(rec.Body.String()) {
		if l == "" || hasPrefixAny(l, "data: ", "event: event", "id: 7") {
			continue
		}
		t.Errorf("forged SSE line %q in %q", l, rec.Body.String())
	}
}

func splitSSE(s string) []string {
	var out []string
	cur := ""
	for i := 0; i < len(s); i++ {
		if s[i] == '\r' || s[i] == '\n' {
			out = append(out, cur)
			cur = ""
			continue
		}
		cur += string(s[i])
	}
	return append(out, cur)
}

func hasPrefixAny(s string, ps ...string) bool {
	for _, p := range ps {
		if len(s) >= len(p) && s[:len(p)] == p {
			return true
		}
	}
	return false
}
