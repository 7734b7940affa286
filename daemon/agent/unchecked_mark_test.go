package agent

import (
	"context"
	"strings"
	"testing"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/daemon/run"
	"github.com/agentd/agentd/daemon/store"
)

const uncheckedLib = "could not put back lib: the checkpoints could not capture it: a person must look at the workspace"

// stored reads agent id as the store holds it.
func (h *harness) stored(id string) *store.Agent {
	h.t.Helper()
	var a *store.Agent
	if err := h.st.View(context.Background(), func(tx *store.Tx) (err error) { a, err = tx.Agent(id); return err }); err != nil {
		h.t.Fatal(err)
	}
	return a
}

// scheduledStartPauses starts agent id's next run as a schedule does and checks that it
// pauses for a person, its reason naming the unchecked change, which stays marked.
func (h *harness) scheduledStartPauses(id string) {
	h.t.Helper()
	got, err := h.sup.runs.StartTask(context.Background(), id, "the scheduled task", run.Options{By: "schedule s"})
	if err != nil {
		h.t.Fatalf("start task: %v", err)
	}
	if got.State != api.StatePaused || !strings.Contains(got.StateReason, "could not put back lib") || !strings.Contains(got.StateReason, "waits for a person") {
		h.t.Errorf("a schedule's run on a workspace holding an unchecked change is %s (%q), want paused for a person, saying what", got.State, got.StateReason)
	}
	if !strings.Contains(got.Unchecked, "could not put back lib") {
		h.t.Errorf("a schedule's start cleared the mark (%q): no person looked", got.Unchecked)
	}
}

// A step that ends late, once its run was over, with a change the second wall could not
// check marks the agent, idle, failed or on a run of its own, in the same transaction,
// naming the step and what: its state and reason stay as they were, its next start — a
// schedule's task — pauses for a person saying why, and a person's resume clears the
// mark and runs it.
func TestUncheckedLateEndPausesTheNextStartUntilAPersonResumes(t *testing.T) {
	for _, c := range []struct {
		name  string
		state api.AgentState
		run   string // the agent's run; the step's is r-old
	}{
		{"idle", api.StateIdle, "r-old"},
		{"failed", api.StateFailed, "r-old"},
		{"run_over", api.StateIdle, "r-new"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, withCheckpoints)
			a := h.endLate(c.state, c.run, uncheckedLib)
			now := h.stored(a.ID)
			if now.State != c.state || now.StateReason != "before" {
				t.Errorf("the late end moved the agent to %s (%q): it stays %s until it starts", now.State, now.StateReason, c.state)
			}
			if !strings.Contains(now.Unchecked, "step 1 (execute_shell) of run r-old") || !strings.Contains(now.Unchecked, uncheckedLib) {
				t.Errorf("the agent's mark is %q, want the step and what could not be checked", now.Unchecked)
			}
			shown, err := h.sup.agentViews.Agent(context.Background(), a.ID)
			if err != nil || shown.Unchecked != now.Unchecked {
				t.Errorf("the agent is shown with mark %q (err %v), stored %q", shown.Unchecked, err, now.Unchecked)
			}
			h.scheduledStartPauses(a.ID)
			resumed, err := h.sup.runs.Resume(context.Background(), a.ID)
			if err != nil {
				t.Fatalf("a person's resume: %v", err)
			}
			if resumed.State != api.StateThinking || resumed.Unchecked != "" || h.stored(a.ID).Unchecked != "" {
				t.Errorf("after a person's resume the agent is %s with mark %q, stored %q: want thinking, cleared", resumed.State, resumed.Unchecked, h.stored(a.ID).Unchecked)
			}
		})
	}
}

// The mark is stored with the agent: a restart of the daemon keeps it, and the next
// start still pauses for a person.
func TestUncheckedChangeMarkSurvivesARestart(t *testing.T) {
	h := newHarness(t, withCheckpoints)
	a := h.endLate(api.StateIdle, "r-old", uncheckedLib)
	h.stop()
	h.start()
	if got := h.stored(a.ID).Unchecked; !strings.Contains(got, uncheckedLib) {
		t.Fatalf("after a restart the agent's mark is %q, want what could not be checked", got)
	}
	h.scheduledStartPauses(a.ID)
}

// A late end whose change the second wall checked leaves no mark: the next start thinks.
func TestLateEndWithCheckedWritesLeavesNoMark(t *testing.T) {
	h := newHarness(t, withCheckpoints)
	a := h.endLate(api.StateIdle, "r-old", "")
	if got := h.stored(a.ID).Unchecked; got != "" {
		t.Errorf("a checked late end marked the agent: %q", got)
	}
	got, err := h.sup.runs.StartTask(context.Background(), a.ID, "the scheduled task", run.Options{By: "schedule s"})
	if err != nil {
		t.Fatal(err)
	}
	if got.State == api.StatePaused {
		t.Errorf("a schedule's run after a checked late end paused: %q", got.StateReason)
	}
}
