package slack

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentd/agentd/bots"
	"github.com/agentd/agentd/daemon/client"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// TestBlocksGolden fixes the Block Kit the bot posts: escaping, code blocks, buttons.
func TestBlocksGolden(t *testing.T) {
	p := &client.Proposal{ID: "p-1", AgentID: "a-1", Step: 3, Command: "write_file", Status: client.ProposalPending,
		Args:     json.RawMessage(`{"path":"notes/<a>.md","contents":"x ` + "```" + ` & y"}`),
		Thoughts: client.Thoughts{Speak: "I'll write <b> & save", Plan: "- write\n- finish"}}
	for name, m := range map[string]bots.Message{
		"proposal_pending": bots.FormatProposal(bots.ProposalView{Proposal: p, ApproveN: 3}, Platform),
		"proposal_decided": bots.FormatProposal(bots.ProposalView{Proposal: p, Decision: &client.Decision{Kind: client.DecisionApprove, Count: 3, By: "U1", Source: Platform}}, Platform),
		"result_failed": func() bots.Message {
			m, _ := bots.FormatResult(&client.Episode{Command: "read_file", Outcome: "failed", Result: "no such file: <x>"}, 2500)
			return m
		}(),
	} {
		t.Run(name, func(t *testing.T) {
			got, err := json.MarshalIndent(Blocks(m), "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", name+".golden.json")
			if *update {
				os.WriteFile(path, append(got, '\n'), 0o644)
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if string(want) != string(got)+"\n" {
				t.Errorf("blocks differ from %s:\n%s", path, got)
			}
		})
	}
}
