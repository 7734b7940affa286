package store

import (
	"context"
	"errors"
	"testing"

	"github.com/agentd/agentd/api"
)

func TestHelpersAndWaits(t *testing.T) {
	s, _ := open(t)
	seed(t, s)
	ctx := context.Background()
	err := s.Tx(ctx, func(tx *Tx) error {
		h := &Agent{Agent: api.Agent{ID: "a-2", Name: "one/helper", State: api.StateThinking, Workspace: "/tmp/ws/agents/helper",
			RunID: "r-2", ParentID: "a-1", Policy: api.Policy{Mode: "ask"}}}
		if err := tx.InsertAgent(h); err != nil {
			return err
		}
		return tx.InsertWait(&HelperWait{ProposalID: "p-1", AgentID: "a-1", HelperID: "a-2", HelperRun: "r-2"})
	})
	if err != nil {
		t.Fatal(err)
	}
	err = s.Tx(ctx, func(tx *Tx) error {
		hs, err := tx.Helpers("a-1")
		if err != nil {
			return err
		}
		if len(hs) != 1 || hs[0].ParentID != "a-1" || hs[0].Name != "one/helper" {
			t.Fatalf("helpers of a-1 = %+v", hs)
		}
		if top, err := tx.Helpers(""); err != nil || len(top) != 0 {
			t.Fatalf("helpers of \"\" = %v, %v; want none: top-level agents are no one's helpers", top, err)
		}
		w, err := tx.WaitOn("r-2")
		if err != nil || w.ProposalID != "p-1" || w.HelperID != "a-2" {
			t.Fatalf("WaitOn = %+v, %v", w, err)
		}
		if w, err := tx.WaitFor("p-1"); err != nil || w.HelperRun != "r-2" {
			t.Fatalf("WaitFor = %+v, %v", w, err)
		}
		if ok, err := tx.DeleteWait("p-1"); !ok || err != nil {
			t.Fatalf("first DeleteWait = %v, %v", ok, err)
		}
		if ok, err := tx.DeleteWait("p-1"); ok || err != nil {
			t.Fatalf("second DeleteWait = %v, %v; want false: a helper's end is delivered once", ok, err)
		}
		if _, err := tx.WaitOn("r-2"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("WaitOn after delete: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestWaitGoesWithItsParent(t *testing.T) {
	s, _ := open(t)
	seed(t, s)
	ctx := context.Background()
	err := s.Tx(ctx, func(tx *Tx) error {
		if err := tx.InsertWait(&HelperWait{ProposalID: "p-1", AgentID: "a-1", HelperID: "a-9", HelperRun: "r-9"}); err != nil {
			return err
		}
		return tx.DeleteAgent("a-1")
	})
	if err != nil {
		t.Fatal(err)
	}
	s.View(ctx, func(tx *Tx) error {
		if ws, err := tx.Waits(); err != nil || len(ws) != 0 {
			t.Fatalf("waits after the parent's removal = %v, %v", ws, err)
		}
		return nil
	})
}
