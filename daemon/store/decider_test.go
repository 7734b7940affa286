package store

import (
	"context"
	"testing"

	"github.com/agentd/agentd/api"
)

// TestDecisionKeepsTheChatDecidersName: a chat decision's display name (by_name) is
// stored beside the id, so history and replay name the person as follow did.
func TestDecisionKeepsTheChatDecidersName(t *testing.T) {
	s, _ := open(t)
	seed(t, s)
	ctx := context.Background()
	err := s.Tx(ctx, func(tx *Tx) error {
		return tx.InsertDecision(&api.Decision{ProposalID: "p-1", Kind: api.DecisionApprove, Count: 1, Source: "slack", By: "U04ABC", ByName: "Ana Lima"})
	})
	if err != nil {
		t.Fatal(err)
	}
	err = s.View(ctx, func(tx *Tx) error {
		d, err := tx.LastDecision("p-1")
		if err != nil {
			return err
		}
		if d.By != "U04ABC" || d.ByName != "Ana Lima" {
			t.Errorf("decision by %q named %q, want U04ABC named Ana Lima", d.By, d.ByName)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
