package slack

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/bots"
	"github.com/agentd/agentd/internal/display/displaytest"
)

// Every hostile string (displaytest.Cases) a proposal, a decision, a result, a question
// or a note carries reaches Slack with its control, bidi and zero-width characters
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
				"decided":  bots.FormatProposal(bots.ProposalView{Proposal: p, Decision: &api.Decision{Kind: api.DecisionFeedback, Feedback: c.Text, By: "U1", Source: Platform}}, Platform),
				"result":   result,
				"question": bots.FormatQuestion(&api.Question{ProposalID: "p-1", Text: c.Text}, ""),
				"note":     bots.FormatNote("finished: " + c.Text),
			} {
				js, _ := json.Marshal(Blocks(m))
				if leak := displaytest.RawIn(strings.Join(blockStrings(js), "\n") + "\n" + escape(m.Summary)); leak != "" {
					t.Errorf("the %s message shows %s", name, leak)
				}
			}
		})
	}
}

// blockStrings are the strings of encoded blocks, each line as Slack shows it.
func blockStrings(js []byte) []string {
	var v any
	json.Unmarshal(js, &v)
	var out []string
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			out = append(out, x)
		case []any:
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(v)
	return out
}
