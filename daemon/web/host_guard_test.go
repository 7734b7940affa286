package web

import (
	"net/http/httptest"
	"testing"
)

// Encoded and rebinding Host/Origin variants must be refused.
func TestHostGuardRefusesEncodedAndRebindingForms(t *testing.T) {
	g := hostGuard{port: "7077"}
	for _, h := range []string{
		"localhost.:7077", "LOCALHOST.:7077", "127.0.0.1.:7077", "2130706433:7077", "0x7f000001:7077",
		"0177.0.0.1:7077", "127.1:7077", "evil.com:7077", "127.0.0.1.nip.io:7077", "localhost:7078",
		"localhost", "127.0.0.1", "user@127.0.0.1:7077", "[::ffff:7f00:1]:7078", "evil.localhost:7077",
		"127.0.0.1:07077", "127.0.0.1:+7077", "[::1%25lo]:7077", "[fe80::1]:7077", "0.0.0.0:7077",
	} {
		if g.allowed(h) {
			t.Errorf("Host %q allowed", h)
		}
	}
	for _, o := range []string{
		"null", "http://evil.com", "https://127.0.0.1:7077", "http://127.0.0.1:7077/x", "http://localhost.:7077",
		"http://user@127.0.0.1:7077", "http://127.0.0.1:7077@evil.com", "http://[::1]:7078", "file://",
	} {
		if g.sameOrigin(o) {
			t.Errorf("Origin %q same-origin", o)
		}
	}
	for _, site := range []string{"cross-site", "same-site"} {
		r := httptest.NewRequest("POST", "http://127.0.0.1:7077/agents/a/decide", nil)
		r.Header.Set("Sec-Fetch-Site", site)
		if s, _ := g.refuse(r); s == 0 {
			t.Errorf("Sec-Fetch-Site %s, no Origin: not refused", site)
		}
	}
}

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
