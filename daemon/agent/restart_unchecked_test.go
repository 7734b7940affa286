package agent

import (
	"context"
	"testing"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/daemon/store"
)

// TestALateStepWhoseEndARestartLostMarksTheAgent: a run ended (its budget ran out, a
// person stopped it) while its command, checkpointed at its start, went on writing, and
// the daemon stopped before the command ended. On start, recover() records the step
// (recovered_late): no end checkpoint held what it wrote to the write-deny rules, so the
// agent is marked, and its next start pauses for a person instead of thinking on that
// workspace.
func TestALateStepWhoseEndARestartLostMarksTheAgent(t *testing.T) {
	h := newHarness(t, withCheckpoints)
	listForever(h)
	ctx := context.Background()
	a := &store.Agent{Agent: api.Agent{ID: "a-lost", Name: "lost", State: api.StateIdle, StateReason: "its run's budget ran out", RunID: "r-old", Task: "a task",
		Policy: api.Policy{Mode: "ask"}, Workspace: t.TempDir()}}
	p := &api.Proposal{ID: "p-lost", AgentID: a.ID, RunID: "r-old", Step: 1, Command: "execute_shell", Args: []byte(`{"command_line":"make"}`), Hash: "h", Status: api.ProposalStarted}
	h.stop()
	err := h.st.Tx(ctx, func(tx *store.Tx) error {
		if err := tx.InsertAgent(a); err != nil {
			return err
		}
		if err := tx.StartRun("r-old", a.ID, a.Task); err != nil {
			return err
		}
		if err := tx.InsertProposal(p); err != nil {
			return err
		}
		// checkpointed at its start: it may write
		return tx.InsertStepCheckpoint(&store.StepCheckpoint{ID: p.ID, AgentID: a.ID, RunID: "r-old", Kind: store.CheckpointStep, Before: 1})
	})
	if err != nil {
		t.Fatal(err)
	}
	h.start() // the daemon starts again: recover() finds p started
	got := h.waitFor(a.ID, "the lost step recorded", func(x *api.Agent) bool { return x.State == api.StateIdle })
	t.Logf("after the restart: %s (%q)", got.State, got.StateReason)
	if _, err := h.sup.runs.Task(ctx, a.Name, "the next scheduled task"); err != nil {
		t.Fatal(err)
	}
	now := h.waitFor(a.ID, "the new run", func(x *api.Agent) bool { return x.State != api.StateIdle })
	if got.Unchecked == "" {
		t.Fatalf("after the restart the agent is not marked: %s (%q)", got.State, got.StateReason)
	}
	if now.State != api.StatePaused {
		t.Fatalf("the next run of an agent whose late step's writes no wall checked (a restart lost its end) is %s (%q): want paused for a person", now.State, now.StateReason)
	}
}
