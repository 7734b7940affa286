package store

import (
	"context"
	"errors"
	"testing"

	"github.com/agentd/agentd/api"
)

// A team run's thread survives a reopen; its seq only moves forward; an ended run's
// binding is no longer listed (nothing to follow) but its thread is still found.
func TestTeamBindings(t *testing.T) {
	s, path := open(t)
	ctx := context.Background()
	err := s.Tx(ctx, func(tx *Tx) error {
		for _, id := range []string{"t-1", "t-2"} {
			if err := tx.InsertTeamRun(&TeamRun{TeamRun: api.TeamRun{ID: id, Workflow: "w", Task: "x", Status: api.TeamRunning, State: "a"}, Source: "s"}); err != nil {
				return err
			}
		}
		if err := tx.BindTeam(&TeamBinding{TeamRunID: "t-1", Platform: "slack", Team: "T1", Channel: "C1", Thread: "100.1", CreatedBy: "U1"}); err != nil {
			return err
		}
		if err := tx.BindTeam(&TeamBinding{TeamRunID: "t-2", Platform: "slack", Channel: "C1", Thread: "100.2"}); err != nil {
			return err
		}
		if err := tx.SetTeamSeq("t-1", "slack", 5); err != nil {
			return err
		}
		if err := tx.SetTeamSeq("t-1", "slack", 3); err != nil { // late: ignored
			return err
		}
		r, err := tx.TeamRun("t-2")
		if err != nil {
			return err
		}
		r.Status = api.TeamFinished
		return tx.UpdateTeamRun(r)
	})
	if err != nil {
		t.Fatal(err)
	}
	s2 := reopen(t, s, path)
	err = s2.View(ctx, func(tx *Tx) error {
		all, err := tx.TeamBindings()
		if err != nil {
			return err
		}
		if len(all) != 1 || all[0].TeamRunID != "t-1" || all[0].Seq != 5 || all[0].Team != "T1" || all[0].CreatedBy != "U1" {
			t.Errorf("running team bindings = %+v", all)
		}
		b, err := tx.TeamBindingByThread("slack", "C1", "100.2")
		if err != nil || b.TeamRunID != "t-2" {
			t.Errorf("ended run's thread = %+v, %v", b, err)
		}
		if _, err := tx.TeamBindingByThread("discord", "C1", "100.1"); !errors.Is(err, ErrNotFound) {
			t.Errorf("other platform: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
