package discord

import (
	"strings"
	"testing"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/bots"
	"github.com/agentd/agentd/internal/testutil"
)

// The bot renders the relay's messages; these goldens are what discordgo sends for them.
func TestFromMessageGolden(t *testing.T) {
	p := proposal("p-0123456789ab", "write_file", `{"path": "notes/<@&1>.md", "text": "@everyone `+"```"+`rm -rf"}`, "Writing **notes** @here")
	p.AgentID, p.Status, p.Thoughts.Plan = "a-1", api.ProposalPending, "- write\n- finish"
	cases := []struct {
		name string
		m    bots.Message
	}{
		{"pending", bots.FormatProposal(bots.ProposalView{Proposal: p, ApproveN: 3}, Platform)},
		{"decided", bots.FormatProposal(bots.ProposalView{Proposal: p, Decision: &api.Decision{ProposalID: p.ID,
			Kind: api.DecisionFeedback, Feedback: "use <@1> _less_", By: "400000000000000001", Source: Platform}}, Platform)},
		{"long_result", func() bots.Message {
			m, _ := bots.FormatResult(&api.Episode{Step: 3, Command: "read_file", Outcome: "succeeded", Result: strings.Repeat("line of text\n", 200)}, 5000)
			return m
		}()},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := FromMessage(c.m)
			// The decider shows as a mention on purpose (allowed_mentions keeps it silent).
			checkContent(t, strings.ReplaceAll(m.Content, "<@400000000000000001>", "alice"))
			testutil.Golden(t, "testdata/relay_"+c.name+".json", wire(t, m.Send(), m.Files))
		})
	}
}

func TestFromMessageDropsBadButtons(t *testing.T) {
	m := FromMessage(bots.Message{Summary: "x", Buttons: []bots.Button{
		{Action: bots.ActionApprove, Ref: bots.Ref{ProposalID: "not-a-proposal"}},
		{Action: "explode", Ref: bots.Ref{ProposalID: "p-0123456789ab"}},
		{Action: bots.ActionApproveN, Count: 1000, Ref: bots.Ref{ProposalID: "p-0123456789ab"}},
	}})
	if m.Components != nil || m.Content != "x" {
		t.Errorf("FromMessage = %+v, want no buttons (none would parse back) and the summary", m)
	}
}
