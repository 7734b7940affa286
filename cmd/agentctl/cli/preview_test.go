package cli_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/internal/apitest"
	"github.com/agentd/agentd/internal/testutil"
)

// TestPreviewGolden shows a write_file, an execute_shell and a clone_repository proposal
// with the daemon's previews through `agentctl show` and `agentctl follow`: the diff, the
// programs with their sandbox and network, the host, all escaped.
func TestPreviewGolden(t *testing.T) {
	for _, p := range apitest.PreviewProposals() {
		t.Run(p.Command, func(t *testing.T) {
			f := newFakeDaemon(t)
			ag := &api.Agent{ID: p.AgentID, Name: "previewer", State: api.StateAwaitingDecision, Task: "keep notes",
				RunID: p.RunID, Step: p.Step, Policy: api.Policy{Mode: "ask"}, Pending: p, CreatedAt: p.CreatedAt, UpdatedAt: p.CreatedAt}
			f.set(func() {
				f.agents = []*api.Agent{ag}
				f.events = func(w *eventWriter, r *http.Request, conn int) {
					w.send(api.Event{Seq: 1, Type: api.EventProposal, AgentID: p.AgentID, Proposal: p})
					w.send(api.Event{Seq: 2, Type: api.EventFinish, AgentID: p.AgentID, Message: "done"})
				}
			})
			for _, verb := range []string{"show", "follow"} {
				r := runCLI(t, "", "--socket", f.sock, verb, "previewer")
				got := fmt.Sprintf("$ agentctl %s previewer\n%s", verb, r)
				if verb == "follow" {
					// stderr's prompts race stdin's end with the stream's: stdout only.
					got = fmt.Sprintf("$ agentctl follow previewer\n[exit %d]\n--- stdout\n%s", r.code, r.stdout)
				}
				testutil.Golden(t, fmt.Sprintf("testdata/preview/%s_%s.golden", verb, p.Command), []byte(got))
			}
		})
	}
}
