package store

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/agentd/agentd/api"
)

// TestProposalPreviewSurvivesReopen: a proposal's preview is stored with it and read back
// whole after the store is reopened; a proposal without one reads back without one.
func TestProposalPreviewSurvivesReopen(t *testing.T) {
	s, path := open(t)
	seed(t, s) // p-1: no preview
	pv := &api.Preview{Kind: api.PreviewProgram, Programs: [][]string{{"ls", "-l"}, {"wc"}},
		Dir: "/ws", Sandbox: "bwrap", Network: "none", Note: "n\u202e"}
	err := s.Tx(context.Background(), func(tx *Tx) error {
		return tx.InsertProposal(&api.Proposal{ID: "p-2", AgentID: "a-1", RunID: "r-1", Step: 2, Command: "execute_shell",
			Args: json.RawMessage(`{"command_line":"ls -l | wc"}`), Hash: "h2", Status: api.ProposalSuperseded, Preview: pv})
	})
	if err != nil {
		t.Fatal(err)
	}
	s2 := reopen(t, s, path)
	err = s2.View(context.Background(), func(tx *Tx) error {
		p1, err := tx.Proposal("p-1")
		if err != nil {
			return err
		}
		p2, err := tx.Proposal("p-2")
		if err != nil {
			return err
		}
		if p1.Preview != nil {
			t.Errorf("p-1 has a preview: %+v", p1.Preview)
		}
		if !reflect.DeepEqual(p2.Preview, pv) {
			t.Errorf("p-2 preview = %+v, want %+v", p2.Preview, pv)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
