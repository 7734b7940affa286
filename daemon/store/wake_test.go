package store

import (
	"context"
	"errors"
	"testing"

	"github.com/agentd/agentd/api"
)

// TestWakeState: what a run saw and the failed checks in a row survive a reopen, are
// kept apart (a failure leaves seen alone, a run's start leaves the failures), and go
// with their schedule; a schedule removed meanwhile gets no row.
func TestWakeState(t *testing.T) {
	s, path := open(t)
	ctx := context.Background()
	sched := &Schedule{Schedule: api.Schedule{ID: "s-1", Name: "inbox", Spec: "* * * * *", Template: "inbox", Goal: "triage",
		Autonomy: api.Autonomy{Mode: "ask"}, Delivery: "agentctl", Concurrency: "skip", Missed: "skip"}}
	if err := s.Tx(ctx, func(tx *Tx) error { return tx.InsertSchedule(sched) }); err != nil {
		t.Fatal(err)
	}
	err := s.View(ctx, func(tx *Tx) error {
		if _, err := tx.WakeState("s-1"); !errors.Is(err, ErrNotFound) {
			t.Errorf("before any check: %v, want ErrNotFound", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var counts []int
	err = s.Tx(ctx, func(tx *Tx) error {
		for range 2 {
			n, err := tx.WakeCheckFailed("s-1", "notes: does not exist")
			if err != nil {
				return err
			}
			counts = append(counts, n)
		}
		return tx.SetWakeSeen("s-1", `{"a":1}`)
	})
	if err != nil || len(counts) != 2 || counts[0] != 1 || counts[1] != 2 {
		t.Fatalf("failures counted %v, %v; want [1 2]", counts, err)
	}
	s.Close()
	if s, err = Open(ctx, path); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var w *WakeState
	read := func() {
		t.Helper()
		if err := s.View(ctx, func(tx *Tx) (err error) { w, err = tx.WakeState("s-1"); return err }); err != nil {
			t.Fatal(err)
		}
	}
	read()
	if w.Seen != `{"a":1}` || w.SeenAt.IsZero() || w.Failures != 2 || w.LastError != "notes: does not exist" || w.FailedAt.IsZero() {
		t.Fatalf("after reopen: %+v", w)
	}
	if err := s.Tx(ctx, func(tx *Tx) error { return tx.WakeCheckPassed("s-1") }); err != nil {
		t.Fatal(err)
	}
	read()
	if w.Failures != 0 || w.Seen != `{"a":1}` || w.LastError == "" {
		t.Fatalf("after a passed check: %+v", w)
	}
	err = s.Tx(ctx, func(tx *Tx) error {
		if err := tx.DeleteSchedule("s-1"); err != nil {
			return err
		}
		if n, err := tx.WakeCheckFailed("s-1", "x"); n != 0 || err != nil {
			t.Errorf("failure of a removed schedule: %d, %v", n, err)
		}
		if err := tx.SetWakeSeen("s-1", "{}"); err != nil {
			t.Errorf("seen of a removed schedule: %v", err)
		}
		if _, err := tx.WakeState("s-1"); !errors.Is(err, ErrNotFound) {
			t.Errorf("a removed schedule's state: %v, want ErrNotFound", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
