package agent

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/daemon/store"
)

// A step whose proposal was withdrawn while its command ran (its run's budget ran out)
// and whose change the second wall could not check ends late: the agent, gone on in the
// same run or in a new one, pauses for a person as after an end on time, its reason
// saying what could not be checked; an idle one stays idle.
func TestUncheckedLateEndPausesTheAgentThatWentOn(t *testing.T) {
	const unchecked = "could not put back lib: the checkpoints could not capture it: a person must look at the workspace"
	for _, c := range []struct {
		name       string
		state      api.AgentState
		run        string // the agent's run; the step's is r-old
		want       api.AgentState
		wantReason bool
	}{
		{"same_run_thinking", api.StateThinking, "r-old", api.StatePaused, true},
		{"new_run_executing", api.StateExecuting, "r-new", api.StatePaused, true},
		{"same_run_idle", api.StateIdle, "r-old", api.StateIdle, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, withCheckpoints)
			ctx := context.Background()
			a := h.endLate(c.state, c.run, unchecked)
			var now *store.Agent
			if err := h.st.View(ctx, func(tx *store.Tx) (err error) { now, err = tx.Agent(a.ID); return err }); err != nil {
				t.Fatal(err)
			}
			if now.State != c.want || strings.Contains(now.StateReason, unchecked) != c.wantReason {
				t.Errorf("after the late end the agent is %s (%q), want %s (the unchecked change named: %v)", now.State, now.StateReason, c.want, c.wantReason)
			}
		})
	}
}

// endLate stores agent a-late in state, on run, and the step p-late of run r-old,
// checkpointed and withdrawn while its command ran, then ends that step late, its change
// unchecked for the reason unchecked ("" for a change the second wall checked).
func (h *harness) endLate(state api.AgentState, run, unchecked string) *store.Agent {
	t := h.t
	t.Helper()
	ctx := context.Background()
	a := &store.Agent{Agent: api.Agent{ID: "a-late", Name: "late", State: state, StateReason: "before", RunID: run, Task: "a task",
		Policy: api.Policy{Mode: "ask"}, Workspace: t.TempDir()}}
	p := &api.Proposal{ID: "p-late", AgentID: a.ID, RunID: "r-old", Step: 1, Command: "execute_shell", Args: []byte(`{}`), Hash: "h", Status: api.ProposalFailed}
	err := h.st.Tx(ctx, func(tx *store.Tx) error {
		if err := tx.InsertAgent(a); err != nil {
			return err
		}
		for _, run := range slices.Compact([]string{"r-old", run}) {
			if err := tx.StartRun(run, a.ID, a.Task); err != nil {
				return err
			}
		}
		if err := tx.InsertProposal(p); err != nil {
			return err
		}
		return tx.InsertStepCheckpoint(&store.StepCheckpoint{ID: p.ID, AgentID: a.ID, RunID: "r-old", Kind: store.CheckpointStep, Before: 1})
	})
	if err != nil {
		t.Fatal(err)
	}
	k := h.sup.checkpoints
	k.mu.Lock()
	if k.taken == nil {
		k.taken = map[aheadKey]takenAhead{}
	}
	k.taken[aheadKey{a.ID, true}] = takenAhead{proposal: p.ID, unchecked: unchecked}
	k.mu.Unlock()
	started := *p
	started.Status = api.ProposalStarted // as the runner read it before its run was withdrawn
	if err := h.st.Tx(ctx, func(tx *store.Tx) error {
		_, err := resultTx(h.sup, tx, a.ID, &started, endOf(&started, "done", nil), 0, nil)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return a
}
