package store

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/agentd/agentd/api"
)

func TestScheduleRoundTrip(t *testing.T) {
	s, path := open(t)
	ctx := context.Background()
	in := &Schedule{Schedule: api.Schedule{ID: "s-1", Name: "notes", Spec: "0 9 * * 1-5", TimeZone: "Europe/Berlin",
		Template: "notes", Goal: "summarize ~/notes", Autonomy: api.Autonomy{Mode: "patterns", Allow: []string{"read_file(*)"}},
		Budget: api.Budget{MaxSteps: 3, MaxTokens: 5000}, Delivery: "agentctl", Concurrency: "queue", Missed: "run_once"},
		MaxWall: 90 * time.Minute}
	mustTx(t, s, func(tx *Tx) error { return tx.InsertSchedule(in) })
	err := s.Tx(ctx, func(tx *Tx) error {
		dup := *in
		dup.ID = "s-2"
		return tx.InsertSchedule(&dup)
	})
	if err == nil {
		t.Error("a second schedule with the same name was stored")
	}
	err = s.Tx(ctx, func(tx *Tx) error {
		both := *in
		both.ID, both.Name, both.Agent = "s-3", "both", "a-1"
		return tx.InsertSchedule(&both)
	})
	if err == nil {
		t.Error("a schedule with both an agent and a template was stored")
	}
	s.Close()
	s, err = Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	mustView(t, s, func(tx *Tx) error {
		got, err := tx.ScheduleByName("notes")
		if err != nil {
			return err
		}
		if got.Spec != in.Spec || got.TimeZone != "Europe/Berlin" || got.Budget.MaxTime != "1h30m0s" || got.MaxWall != 90*time.Minute ||
			len(got.Autonomy.Allow) != 1 || got.Concurrency != "queue" || got.Missed != "run_once" || !got.LastFired.IsZero() {
			t.Errorf("schedule after reopen = %+v", got)
		}
		_, err = tx.Schedule("nope")
		if !errors.Is(err, ErrNotFound) {
			t.Errorf("missing schedule: err = %v, want ErrNotFound", err)
		}
		return nil
	})
}

func TestScheduleRunsRecordAndEnd(t *testing.T) {
	s, _ := open(t)
	ctx := context.Background()
	seed(t, s) // agent a-1 with run r-1
	t0 := time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)
	mustTx(t, s, func(tx *Tx) error {
		if err := tx.InsertSchedule(&Schedule{Schedule: api.Schedule{ID: "s-1", Name: "n", Spec: "@daily", Agent: "a-1",
			Goal: "g", Autonomy: api.Autonomy{Mode: "ask"}, Delivery: "agentctl", Concurrency: "skip", Missed: "skip"}}); err != nil {
			return err
		}
		if err := tx.RecordScheduleRun(&api.ScheduleRun{ID: "f-1", ScheduleID: "s-1", Scheduled: t0, Outcome: "missed", Reason: "down"}); err != nil {
			return err
		}
		r := &api.ScheduleRun{ID: "f-2", ScheduleID: "s-1", Scheduled: t0.Add(time.Hour), Started: t0.Add(time.Hour), Outcome: "started", RunID: "r-1"}
		if err := tx.RecordScheduleRun(r); err != nil {
			return err
		}
		// A record for a removed schedule is dropped, not an error.
		return tx.RecordScheduleRun(&api.ScheduleRun{ID: "f-3", ScheduleID: "gone", Scheduled: t0, Outcome: "missed"})
	})
	mustTx(t, s, func(tx *Tx) error {
		if err := tx.EndRun("r-1", "budget_exhausted", "3 steps"); err != nil {
			return err
		}
		run, err := tx.Run("r-1")
		if err != nil {
			return err
		}
		ok, err := tx.EndScheduleRun("r-1", run.Outcome, run.Reason, run.Steps, run.Tokens)
		if !ok || err != nil {
			t.Errorf("EndScheduleRun = %v, %v; want true", ok, err)
		}
		ok, _ = tx.EndScheduleRun("r-1", "finished", "", 0, 0)
		if ok {
			t.Error("EndScheduleRun changed a record that had ended already")
		}
		return nil
	})
	s.View(ctx, func(tx *Tx) error {
		runs, err := tx.ScheduleRuns("s-1", 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(runs) != 2 || runs[0].ID != "f-2" || runs[1].Outcome != "missed" {
			t.Fatalf("runs = %+v", runs)
		}
		if r := runs[0]; r.Outcome != "budget_exhausted" || r.AgentID != "a-1" || r.Reason != "3 steps" || r.Ended.IsZero() {
			t.Errorf("ended record = %+v", r)
		}
		return nil
	})
	// Removing the schedule removes its records.
	s.Tx(ctx, func(tx *Tx) error { return tx.DeleteSchedule("s-1") })
	s.View(ctx, func(tx *Tx) error {
		if runs, _ := tx.ScheduleRuns("s-1", 0); len(runs) != 0 {
			t.Errorf("records left after the schedule was removed: %+v", runs)
		}
		return nil
	})
}

func TestRunCountsStepsAndTokens(t *testing.T) {
	s, _ := open(t)
	ctx := context.Background()
	a := seed(t, s)
	mustTx(t, s, func(tx *Tx) error {
		a.PromptTokens, a.EvalTokens = 100, 20
		if err := tx.UpdateAgent(a); err != nil {
			return err
		}
		if err := tx.StartRun("r-2", a.ID, "next"); err != nil {
			return err
		}
		if err := tx.SetRunBudget("r-2", 3, 1000, time.Minute); err != nil {
			return err
		}
		a.Step, a.PromptTokens, a.EvalTokens = 2, 150, 40
		return tx.UpdateAgent(a)
	})
	s.View(ctx, func(tx *Tx) error {
		runs, err := tx.BudgetedRuns()
		if err != nil || len(runs) != 1 || runs[0].ID != "r-2" || runs[0].TokensBase != 120 || runs[0].MaxWall != time.Minute {
			t.Errorf("budgeted runs = %+v, %v", runs, err)
		}
		return nil
	})
	s.Tx(ctx, func(tx *Tx) error { return tx.EndRun("r-2", "finished", "done") })
	s.View(ctx, func(tx *Tx) error {
		r, err := tx.Run("r-2")
		if err != nil || r.Steps != 2 || r.Tokens != 70 || r.Ended.IsZero() {
			t.Errorf("run = %+v, %v; want 2 steps, 70 tokens, ended", r, err)
		}
		if runs, _ := tx.BudgetedRuns(); len(runs) != 0 {
			t.Errorf("an ended run is still listed: %+v", runs)
		}
		return nil
	})
}

// TestWakeState: what a run saw and the failed checks in a row survive a reopen, are
// kept apart (a failure leaves seen alone, a run's start leaves the failures), and go
// with their schedule; a schedule removed meanwhile gets no row.
func TestWakeState(t *testing.T) {
	s, path := open(t)
	ctx := context.Background()
	sched := &Schedule{Schedule: api.Schedule{ID: "s-1", Name: "inbox", Spec: "* * * * *", Template: "inbox", Goal: "triage",
		Autonomy: api.Autonomy{Mode: "ask"}, Delivery: "agentctl", Concurrency: "skip", Missed: "skip"}}
	mustTx(t, s, func(tx *Tx) error { return tx.InsertSchedule(sched) })
	mustView(t, s, func(tx *Tx) error {
		if _, err := tx.WakeState("s-1"); !errors.Is(err, ErrNotFound) {
			t.Errorf("before any check: %v, want ErrNotFound", err)
		}
		return nil
	})
	var counts []int
	err := s.Tx(ctx, func(tx *Tx) error {
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
	mustTx(t, s, func(tx *Tx) error { return tx.WakeCheckPassed("s-1") })
	read()
	if w.Failures != 0 || w.Seen != `{"a":1}` || w.LastError == "" {
		t.Fatalf("after a passed check: %+v", w)
	}
	mustTx(t, s, func(tx *Tx) error {
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
}

// TestDaemonStartedRunsAndHelperLinks checks what a restart reads to queue runs as batch
// work: open runs a schedule or a team started, and open helper runs with their parents'.
func TestDaemonStartedRunsAndHelperLinks(t *testing.T) {
	s, _ := open(t)
	ctx := context.Background()
	seed(t, s) // agent a-1, run r-1, proposal p-1 of r-1
	t0 := time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)
	mustTx(t, s, func(tx *Tx) error {
		if err := tx.InsertSchedule(&Schedule{Schedule: api.Schedule{ID: "s-1", Name: "n", Spec: "@daily", Agent: "a-1",
			Goal: "g", Autonomy: api.Autonomy{Mode: "ask"}, Delivery: "agentctl", Concurrency: "skip", Missed: "skip"}}); err != nil {
			return err
		}
		if err := tx.RecordScheduleRun(&api.ScheduleRun{ID: "f-1", ScheduleID: "s-1", Scheduled: t0, Started: t0, Outcome: "started", RunID: "r-1"}); err != nil {
			return err
		}
		h := &Agent{Agent: api.Agent{ID: "a-2", Name: "one/h", State: api.StateThinking, Workspace: "/tmp/ws/h", RunID: "r-2", ParentID: "a-1"}}
		if err := tx.InsertAgent(h); err != nil {
			return err
		}
		if err := tx.StartRun("r-2", "a-2", "help"); err != nil {
			return err
		}
		return tx.InsertWait(&HelperWait{ProposalID: "p-1", AgentID: "a-1", HelperID: "a-2", HelperRun: "r-2"})
	})
	var ids []string
	var links []RunLink
	read := func() {
		t.Helper()
		err := s.View(ctx, func(tx *Tx) (err error) {
			if ids, err = tx.DaemonStartedRuns(); err != nil {
				return err
			}
			links, err = tx.HelperRunLinks()
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	read()
	if !slices.Equal(ids, []string{"r-1"}) {
		t.Errorf("daemon-started runs = %v, want [r-1]", ids)
	}
	if want := (RunLink{HelperRun: "r-2", ParentID: "a-1", ParentRun: "r-1"}); len(links) != 1 || links[0] != want {
		t.Errorf("helper links = %+v, want [%+v]", links, want)
	}
	// Ended runs are no one's to queue.
	if err := s.Tx(ctx, func(tx *Tx) error {
		if err := tx.EndRun("r-1", "finished", ""); err != nil {
			return err
		}
		return tx.EndRun("r-2", "finished", "")
	}); err != nil {
		t.Fatal(err)
	}
	read()
	if len(ids) != 0 || len(links) != 0 {
		t.Errorf("after the runs ended: runs %v, links %+v; want none", ids, links)
	}
}
