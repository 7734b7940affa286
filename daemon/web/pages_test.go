package web

import (
	"context"
	"html"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/internal/agenttest"
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
	b := e.browser()
	b.login(e)
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
