package agent

import (
	"context"
	"fmt"
	"testing"

	ollama "github.com/ollama/ollama/api"

	"github.com/agentd/agentd/api"
)

// TestRestartStartsAgentsAwaitingDecisions restarts a supervisor on agents awaiting
// decisions, with a rule added while it was down: their loops, started paced after the
// others, still take their first round, so the rule approves and runs every proposal.
func TestRestartStartsAgentsAwaitingDecisions(t *testing.T) {
	h := newHarness(t)
	h.fake.SetDefault(func(*ollama.ChatRequest) string { return reply("list_folder", map[string]string{"path": "."}) })
	const n = 3*startPaced + 1
	var ids []string
	for i := range n {
		a := h.create(api.CreateAgentRequest{Name: fmt.Sprintf("waiter-%02d", i), Description: "d", Task: "t"})
		h.pending(a.ID)
		ids = append(ids, a.ID)
	}
	h.stop()
	h.fake.SetDefault(func(*ollama.ChatRequest) string { return reply("finish", map[string]string{"reason": "done"}) })
	h.opt.Allow = []string{"list_folder(*)"}
	h.start()
	for _, id := range ids {
		h.waitFor(id, "its list_folder run by the new rule", func(a *api.Agent) bool {
			ps, err := h.sup.agentViews.Proposals(context.Background(), a.ID)
			if err != nil {
				return false
			}
			for _, p := range ps {
				if p.Command == "list_folder" && p.Status == api.ProposalSucceeded {
					return true
				}
			}
			return false
		})
	}
}

// TestStartLoopNeverStartsASecondLoop checks the paced start leaves an agent whose loop
// a decision or task started meanwhile alone, and reports the round of one it started.
func TestStartLoopNeverStartsASecondLoop(t *testing.T) {
	h := newHarness(t)
	a := h.create(api.CreateAgentRequest{Name: "idle-one", Description: "d"}) // no task: idle, no loop
	rounded := make(chan struct{})
	if !startLoop(h.sup, a.ID, func() { close(rounded) }) {
		t.Fatal("startLoop did not start the idle agent's loop")
	}
	<-rounded // its first round found nothing to do, and said so

	// An agent awaiting a decision: its loop runs, waiting for the person.
	h.fake.SetDefault(func(*ollama.ChatRequest) string { return reply("list_folder", map[string]string{"path": "."}) })
	w := h.create(api.CreateAgentRequest{Name: "waiting-one", Description: "d", Task: "t"})
	h.pending(w.ID)
	if startLoop(h.sup, w.ID, func() { t.Error("rounded called for a loop startLoop did not start") }) {
		t.Error("startLoop started a second loop beside a running one")
	}
}
