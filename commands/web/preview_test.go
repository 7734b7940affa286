package web

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/commands"
)

// TestReadWebpagePreview: the host the fetch connects to, as the network guard reads it,
// and the refusal the fetch would meet, without fetching anything.
func TestReadWebpagePreview(t *testing.T) {
	c := NewReadWebpage(&Fetcher{}, nil)
	tests := []struct {
		name, url, host, note string
	}{
		{"plain", " https://example.com/a?q=1 ", "example.com:443", ""},
		{"userinfo", "https://example.com@evil.example/leak", "evil.example:443", ""},
		{"idn", "http://пример.example/", `xn--e1afmkfd.example:80 (written "пример.example")`, ""},
		{"decimal_ip", "http://2130706433/admin", `127.0.0.1:80 (written "2130706433"), a loopback address`, "refused"},
		{"octal_ip", "http://0177.0.0.1:8080/", `127.0.0.1:8080 (written "0177.0.0.1"), a loopback address`, "refused"},
		{"no_scheme", "example.com/a", "", "no scheme"},
		{"file_scheme", "file:///etc/passwd", "", "refused"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw, _ := json.Marshal(map[string]string{"url": tt.url})
			pv := commands.Preview(context.Background(), c, commands.Env{}, raw)
			if pv == nil || pv.Kind != api.PreviewHost || pv.Host != tt.host {
				t.Fatalf("preview = %+v, want host %q", pv, tt.host)
			}
			if tt.note == "" && pv.Note != "" || !strings.Contains(pv.Note, tt.note) {
				t.Errorf("note = %q, want one with %q", pv.Note, tt.note)
			}
		})
	}
}

// TestWebSearchPreview: where the query's words go, in the order the backends are tried.
func TestWebSearchPreview(t *testing.T) {
	tests := []struct {
		name string
		s    Searcher
		host string
		note string
	}{
		{"none", nil, "", "no search backend"},
		{"searxng_then_ddg", Fallback{&SearxNG{BaseURL: "http://127.0.0.1:8888/searx"}, &DuckDuckGoHTML{}},
			"127.0.0.1:8888, a loopback address (SearxNG), then html.duckduckgo.com:443 (DuckDuckGo)", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pv := commands.Preview(context.Background(), NewWebSearch(tt.s, 0), commands.Env{}, json.RawMessage(`{"query":"x"}`))
			if pv == nil || pv.Host != tt.host || !strings.Contains(pv.Note, tt.note) || tt.note == "" && pv.Note != "" {
				t.Errorf("preview = %+v, want host %q, note with %q", pv, tt.host, tt.note)
			}
		})
	}
}
