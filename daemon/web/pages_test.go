package web

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/agentd/agentd/daemon/client"
)

// teamsService adds a team run waiting for its coder to the real service.
type teamsService struct{ service }

func (teamsService) Teams(context.Context) ([]client.TeamRun, error) {
	return []client.TeamRun{{ID: "t-1", Workflow: "software<script>", Task: "build it", Status: "running", State: "design",
		Phase: "review", Waiting: "coder", Agents: map[string]string{"coder": "a-7", "architect": "a-6"}, Turns: 3, MaxTurns: 20}}, nil
}

func TestPages(t *testing.T) {
	e := newEnv(t)
	a := e.create("audited")
	p := e.waitState(a.ID, client.StateAwaitingDecision).Pending
	_, err := e.sup.API().Facade().Decide(context.Background(), a.ID, client.DecideRequest{ProposalID: p.ID, Kind: client.DecisionDeny, By: "pat", Source: "agentctl"})
	must(t, err == nil, "%v", err)
	e.waitState(a.ID, client.StateIdle)
	con, err := New(Options{Service: teamsService{service{e.sup.API().Facade(), e.mgr}}})
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
