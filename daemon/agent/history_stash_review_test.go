package agent

import (
	"context"
	"testing"

	"github.com/ollama/ollama/api"

	"github.com/agentd/agentd/daemon/client"
	"github.com/agentd/agentd/daemon/store"
)

// TestSummaryTokensReachTheAgentWithAFeedbackStep (review21): summaries made beside the
// steps, and their call's tokens, are stored only by finishExecution: a step that ends
// in feedback (or an ask_user answer, or a helper's result) leaves them in memory, where
// a restart loses them; the agent's token budget does not see tokens the daemon spent.
func TestSummaryTokensReachTheAgentWithAFeedbackStep(t *testing.T) {
	h := newHarness(t)
	h.fake.OnChat(func(*api.ChatRequest) (string, error) {
		return reply("list_folder", map[string]string{"path": "."}), nil
	})
	a := h.create(client.CreateAgentRequest{Name: "fb", Description: "a test agent", Task: "test things"})
	p := h.pending(a.ID)
	eh := h.sup.episodeHistory
	var lines []store.EpisodeLine
	if err := h.st.View(context.Background(), func(tx *store.Tx) (err error) {
		lines, err = tx.EpisodeLines(a.ID, 5, 10)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	stash := madeSummaries{lines: map[int64]string{}, promptTokens: 1_000_000, evalTokens: 1}
	for _, l := range lines {
		stash.lines[l.ID] = "summarized"
	}
	eh.stashSummaries(a.ID, stash)
	before := h.waitFor(a.ID, "pending", func(a *client.Agent) bool { return a.Pending != nil })
	if _, err := h.decide(a.ID, p, "look in the other folder first"); err != nil {
		t.Fatal(err)
	}
	after := h.waitFor(a.ID, "the next proposal", func(a *client.Agent) bool { return a.Pending != nil && a.Pending.ID != p.ID })
	if got := after.PromptTokens - before.PromptTokens; got < 1_000_000 {
		t.Errorf("prompt tokens grew by %d over a feedback step: the summary call's 1,000,000 still wait in memory (%+v)",
			got, eh.madeSummaries(a.ID).promptTokens)
	}
}
