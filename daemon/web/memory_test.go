package web

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/internal/testutil"
)

func TestMemorySearchPage(t *testing.T) {
	e := newEnv(t)
	b := e.browser()
	b.login(e)
	for _, m := range []api.MemoryAddRequest{
		{Text: "The backup runs nightly at 03:00 from the NAS.", Source: "ops-notes.md"},
		{Text: "Lunch is at noon <b>sharp</b>.", Source: "a person"},
	} {
		_, err := e.sup.API().Memory.AddMemory(context.Background(), m)
		must(t, err == nil, "%v", err)
	}
	// The index takes new memories in the background.
	must(t, testutil.Wait(10*time.Second, func() bool {
		ms, _ := e.sup.API().Memory.SearchMemory(context.Background(), api.MemorySearchRequest{Query: "lunch backup"})
		return len(ms) == 2
	}), "the memories never reached the index")
	tests := []struct {
		name, query, agent string
		want, not          []string
	}{
		{"scores_and_sources", "backup nightly", "", []string{"ops-notes.md", "The backup runs nightly", "shared", `id="memories"`, "words backup, nightly"}, []string{"Lunch"}},
		{"model_text_escaped", "lunch noon", "", []string{"&lt;b&gt;sharp&lt;/b&gt;"}, []string{"<b>sharp"}},
		{"unknown_agent_is_a_note", "backup", "nobody", []string{`class="flash"`, "nobody"}, []string{`id="memories"`}},
		{"no_query_no_table", "", "", []string{`id="q"`}, []string{`id="memories"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := b.get("/memory?" + url.Values{"q": {tt.query}, "agent": {tt.agent}}.Encode())
			must(t, got.StatusCode == 200, "status %d: %s", got.StatusCode, got.Body)
			for _, w := range tt.want {
				must(t, strings.Contains(got.Body, w), "the page does not show %q:\n%s", w, got.Body)
			}
			for _, n := range tt.not {
				must(t, !strings.Contains(got.Body, n), "the page shows %q:\n%s", n, got.Body)
			}
		})
	}
	// A score is a number with three decimals.
	got := b.get("/memory?q=backup")
	must(t, strings.Contains(got.Body, "<td>0.") || strings.Contains(got.Body, "<td>1."), "no score shown:\n%s", got.Body)
}
