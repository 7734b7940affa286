package discord

import (
	"encoding/json"
	"testing"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/bots"
	"github.com/agentd/agentd/internal/display/displaytest"
)

// Every hostile string (displaytest.Cases) a proposal, a decision, a result, a question
// or a note carries reaches Discord with its control, bidi and zero-width characters
// escaped, none raw.
func TestMessagesEscapeEveryHostileCharacter(t *testing.T) {
	for _, c := range displaytest.Cases {
		t.Run(c.Name, func(t *testing.T) {
			args, _ := json.Marshal(map[string]string{"command": c.Text})
			p := &api.Proposal{ID: "p-1", AgentID: "a-1", Step: 3, Command: "execute_shell", Status: api.ProposalPending,
				Args: args, Thoughts: api.Thoughts{Speak: c.Text, Plan: c.Text}}
			result, _ := bots.FormatResult(&api.Episode{Command: "execute_shell", Outcome: "succeeded", Result: c.Text}, 2500)
			for name, m := range map[string]bots.Message{
				"proposal": bots.FormatProposal(bots.ProposalView{Proposal: p, ApproveN: 3}, Platform),
				"decided":  bots.FormatProposal(bots.ProposalView{Proposal: p, Decision: &api.Decision{Kind: api.DecisionFeedback, Feedback: c.Text, By: "1", Source: Platform}}, Platform),
				"result":   result,
				"question": bots.FormatQuestion(&api.Question{ProposalID: "p-1", Text: c.Text}, ""),
				"note":     bots.FormatNote("finished: " + c.Text),
			} {
				if leak := displaytest.RawIn(FromMessage(m).Content); leak != "" {
					t.Errorf("the %s message shows %s", name, leak)
				}
			}
		})
	}
}
