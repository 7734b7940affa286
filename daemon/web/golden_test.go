package web

import (
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/internal/apitest"
	"github.com/agentd/agentd/internal/testutil"
)

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
