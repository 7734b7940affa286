package schedule

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/internal/testutil"
)

// Template agents beyond the newest keep finished ones are removed with their
// workspaces when a run ends; one awaiting a decision is kept however old.
func TestTemplateAgentsPruned(t *testing.T) {
	h := newHarness(t, at(8, 0))
	h.stopManager()
	h.keep = 2
	h.startManager()
	h.finishAtOnce()
	ctx := context.Background()
	h.add(api.ScheduleRequest{Name: "tidy", Spec: "@daily", Template: "tidy", Goal: "tidy up", Concurrency: "parallel"})

	var agents []*api.Agent
	for i := range 5 {
		rec, err := h.c.Schedules().Run(ctx, "tidy")
		if err != nil || rec.AgentID == "" {
			t.Fatalf("run-now %d = %+v, %v", i, rec, err)
		}
		a := h.waitAgent(rec.AgentID, func(a *api.Agent) bool { return a.Pending != nil })
		agents = append(agents, a)
		if i == 0 {
			continue // the oldest waits for a decision throughout
		}
		if _, err := h.sup.API().Decisions.Decide(ctx, a.ID, api.DecideRequest{ProposalID: a.Pending.ID, Kind: api.DecisionApprove, By: "test", Source: "test"}); err != nil {
			t.Fatal(err)
		}
		h.waitHistory("tidy", "run end", func(r []api.ScheduleRun) bool { return r[0].Outcome == "finished" })
	}
	want := []string{agents[0].ID, agents[3].ID, agents[4].ID}
	var got []string
	// Wait on what the prunes leave, not on m.pruning: a run's end is recorded before its
	// prune is counted, so a pruning.Wait here could race that Add.
	gone := func(a *api.Agent) bool { _, err := os.Stat(a.Workspace); return os.IsNotExist(err) }
	testutil.Wait(10*time.Second, func() bool {
		all, err := h.sup.API().Views.Agents(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got = got[:0]
		for _, a := range all {
			got = append(got, a.ID)
		}
		slices.Sort(got)
		slices.Sort(want)
		return slices.Equal(got, want) && gone(agents[1]) && gone(agents[2])
	})
	if !slices.Equal(got, want) {
		t.Fatalf("agents left = %v, want %v (the pending one and the newest 2)", got, want)
	}
	for _, a := range agents[1:3] {
		if _, err := os.Stat(a.Workspace); !os.IsNotExist(err) {
			t.Errorf("workspace of removed agent %s: %v", a.Name, err)
		}
	}
	if _, err := os.Stat(agents[4].Workspace); err != nil {
		t.Errorf("workspace of a kept agent: %v", err)
	}
}

// waitAgent polls an agent until cond holds.
func (h *harness) waitAgent(id string, cond func(*api.Agent) bool) *api.Agent {
	h.t.Helper()
	var a *api.Agent
	testutil.Eventually(h.t, 10*time.Second, "agent "+id, func() bool {
		var err error
		a, err = h.sup.API().Views.Agent(context.Background(), id)
		return err == nil && cond(a)
	})
	return a
}
