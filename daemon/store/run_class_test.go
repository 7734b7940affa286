package store

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/agentd/agentd/api"
)

// TestDaemonStartedRunsAndHelperLinks checks what a restart reads to queue runs as batch
// work: open runs a schedule or a team started, and open helper runs with their parents'.
func TestDaemonStartedRunsAndHelperLinks(t *testing.T) {
	s, _ := open(t)
	ctx := context.Background()
	seed(t, s) // agent a-1, run r-1, proposal p-1 of r-1
	t0 := time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)
	err := s.Tx(ctx, func(tx *Tx) error {
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
	if err != nil {
		t.Fatal(err)
	}
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
