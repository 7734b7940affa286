package web

import (
	"context"
	"html"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/internal/agenttest"
	"github.com/agentd/agentd/internal/apitest"
	"github.com/agentd/agentd/internal/testutil"
)

// teamsService adds a team run waiting for its coder to the real service.
type teamsService struct{ service }

func (teamsService) Teams(context.Context) ([]api.TeamRun, error) {
	return []api.TeamRun{{ID: "t-1", Workflow: "software<script>", Task: "build it", Status: "running", State: "design",
		Phase: "review", Waiting: "coder", Agents: map[string]string{"coder": "a-7", "architect": "a-6"}, Turns: 3, MaxTurns: 20}}, nil
}

func TestPages(t *testing.T) {
	e := newEnv(t)
	a := e.create("audited")
	p := e.waitState(a.ID, api.StateAwaitingDecision).Pending
	_, err := e.sup.API().Decisions.Decide(context.Background(), a.ID, api.DecideRequest{ProposalID: p.ID, Kind: api.DecisionDeny, By: "pat", Source: "agentctl"})
	must(t, err == nil, "%v", err)
	e.waitState(a.ID, api.StateIdle)
	con, err := New(Options{Service: teamsService{service{agenttest.Of(e.sup), e.mgr}}})
	must(t, err == nil, "%v", err)
	base, err := con.Listen(context.Background(), "127.0.0.1:0")
	must(t, err == nil, "%v", err)
	t.Cleanup(func() { con.Close(context.Background()) })
	b := e.browser()
	b.base = strings.TrimSuffix(base, "/")
	login, _ := con.LoginURL()
	b.get(login)

	tests := []struct {
		name, path string
		want, not  []string
	}{
		{"teams_with_roles", "/teams", []string{"software&lt;script&gt;", "design / review", "3/20", `<a href="/agents/a-6">architect</a>`, `<a href="/agents/a-7">coder</a>`}, []string{"software<script>"}},
		{"audit_all", "/audit", []string{"audited", `id="audit"`}, nil},
		{"audit_by_agent", "/audit?" + url.Values{"agent": {a.ID}}.Encode(), []string{"audited"}, []string{`class="flash"`}},
		// A removed agent's entries stay under its id: an unknown one is no entries, not an error.
		{"audit_unknown_agent", "/audit?agent=nobody", []string{"No entries."}, []string{"audited"}},
		{"audit_by_kind", "/audit?kind=nothing-like-this", []string{"No entries."}, nil},
		{"doctor", "/doctor", []string{`id="checks"`, "Ollama", "idle: 1"}, nil},
		{"replay_unknown_run", "/runs/r-nope", []string{"r-nope"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := b.get(tt.path)
			for _, w := range tt.want {
				must(t, strings.Contains(got.Body, w), "%s does not show %q (%d):\n%s", tt.path, w, got.StatusCode, got.Body)
			}
			for _, n := range tt.not {
				must(t, !strings.Contains(got.Body, n), "%s shows %q:\n%s", tt.path, n, got.Body)
			}
		})
	}
}

// The agents page lists a page of agents at a time, oldest first, with a link to the
// next: thousands of live rows would make the browser slow. Following the links shows
// every agent once; the last page is the one new agents are added to.
func TestAgentsPageIsPaged(t *testing.T) {
	e := newEnv(t)
	ids := e.createIdle(agentsPageRows*2 + 5)
	b := e.loggedIn()
	rowRE := regexp.MustCompile(`<tr id="agent-([^"]+)"`)
	nextRE := regexp.MustCompile(`<a href="([^"]+)" id="next-page"`)
	var seen []string
	path, pages := "/", 0
	for ; path != ""; pages++ {
		must(t, pages < 5, "more pages than agents")
		got := b.get(path)
		must(t, got.StatusCode == 200, "%s: %d", path, got.StatusCode)
		rows := rowRE.FindAllStringSubmatch(got.Body, -1)
		must(t, len(rows) <= agentsPageRows, "%s lists %d rows, more than a page", path, len(rows))
		for _, r := range rows {
			seen = append(seen, r[1])
		}
		path = ""
		if m := nextRE.FindStringSubmatch(got.Body); m != nil {
			path = html.UnescapeString(m[1])
			must(t, !strings.Contains(got.Body, `data-last="true"`), "a page with a next one is marked last")
		} else {
			must(t, strings.Contains(got.Body, `data-last="true"`), "the last page is not marked last")
		}
	}
	must(t, pages == 3 && slices.Equal(seen, ids), "%d pages listed %d agents, want 3 pages of the %d in order", pages, len(seen), len(ids))
}

func TestMemorySearchPage(t *testing.T) {
	e := newEnv(t)
	b := e.loggedIn()
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

// TestGoldenFragments renders the fragments the pages and the stream are made of for the
// shared preview proposals (a diff, a shell line's programs, a clone's host, each with a
// bidi, zero-width or escape character in it), so a change to what a person is shown is
// a reviewed diff. Update with go test -update.
func TestGoldenFragments(t *testing.T) {
	con, err := New(Options{Service: service{}})
	must(t, err == nil, "%v", err)
	at := time.Date(2026, 11, 21, 9, 30, 0, 0, time.UTC)
	for _, p := range apitest.PreviewProposals() {
		a := &api.Agent{ID: p.AgentID, Name: "researcher", State: api.StateAwaitingDecision, Pending: p, UpdatedAt: at,
			StepsTotal: p.Step, PromptTokens: 1200, EvalTokens: 300, BusyMS: 4200, Budget: &api.Budget{MaxSteps: 50}}
		t.Run(p.Command, func(t *testing.T) {
			var b strings.Builder
			for _, f := range []struct {
				name string
				data any
			}{
				{"row", rowOf(a)},
				{"waiting", waitingOf(a, "CSRF")},
				{"event", eventOf(api.Event{Seq: 7, Type: api.EventProposal, AgentID: a.ID, Time: at, Proposal: p})},
			} {
				html, err := con.fragment(f.name, f.data)
				must(t, err == nil, "%s: %v", f.name, err)
				b.WriteString("<!-- " + f.name + " -->\n" + html + "\n")
			}
			testutil.Golden(t, "testdata/"+p.Command+".html", []byte(b.String()))
		})
	}
	q := &api.Agent{ID: "a-2", Name: "asker", State: api.StateAwaitingDecision, UpdatedAt: at,
		Question: &api.Question{ProposalID: "p-9", Text: "Which folder\u202e? <b>docs</b>", AskedAt: at}}
	html, err := con.fragment("waiting", waitingOf(q, "CSRF"))
	must(t, err == nil, "%v", err)
	testutil.Golden(t, "testdata/question.html", []byte(html+"\n"))
}
