package agent

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/daemon/run"
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

// storeCheckpointedStep stores agent a with runs started, and its step p of run r-old,
// checkpointed at its start.
func (h *harness) storeCheckpointedStep(a *store.Agent, p *api.Proposal, runs ...string) {
	h.t.Helper()
	err := h.st.Tx(context.Background(), func(tx *store.Tx) error {
		if err := tx.InsertAgent(a); err != nil {
			return err
		}
		for _, run := range runs {
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
		h.t.Fatal(err)
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
	h.storeCheckpointedStep(a, p, slices.Compact([]string{"r-old", run})...)
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
	h.storeCheckpointedStep(a, p, "r-old") // checkpointed at its start: it may write
	h.start()                              // the daemon starts again: recover() finds p started
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

// checkpointedAtCrash is startedAtCrash of p with its start's checkpoint recorded: it may
// have written, and no end checkpoint held what it wrote to the write-deny rules.
func (h *harness) checkpointedAtCrash(p *api.Proposal) {
	h.t.Helper()
	h.startedAtCrash(p, func(tx *store.Tx) error {
		return tx.InsertStepCheckpoint(&store.StepCheckpoint{ID: p.ID, AgentID: p.AgentID, RunID: p.RunID, Step: p.Step, Kind: store.CheckpointStep, Before: 1})
	})
}

// A step the daemon stopped during, which may have written, is asked of a person again:
// the question says the workspace is unchecked, in the proposal's preview, the rendering
// agentctl, the chat bots and the web page all show.
func TestAStepARestartAsksAgainSaysTheWorkspaceIsUnchecked(t *testing.T) {
	h := newHarness(t, withCheckpoints)
	a, p := h.proposed(reply("test_side_effect", map[string]string{"what": "x"}))
	h.checkpointedAtCrash(p)
	h.start()
	got := h.waitFor(a.ID, "the interrupted proposal", func(a *api.Agent) bool {
		return a.Pending != nil && a.Pending.Status == api.ProposalInterrupted
	})
	lines, _ := got.Pending.Preview.Render()
	if shown := strings.Join(lines, "\n"); !strings.Contains(shown, "workspace is unchecked") {
		t.Fatalf("the step asked again after a restart shows %q: want it to say the workspace is unchecked", shown)
	}
}

// An idempotent step the daemon stopped during, which may have written, does not run
// again unasked: the agent is marked and paused until a person looks and resumes it,
// then it runs.
func TestAnIdempotentStepThatMayHaveWrittenWaitsForAPersonAfterARestart(t *testing.T) {
	h := newHarness(t, withCheckpoints)
	a, p := h.proposed(reply("write_file", map[string]string{"path": "a.txt", "contents": "x"}))
	h.checkpointedAtCrash(p)
	h.start()
	got := h.waitFor(a.ID, "the agent to settle after the restart", func(a *api.Agent) bool {
		return a.State == api.StatePaused || len(h.history(a.ID)) > 0
	})
	if got.State != api.StatePaused || got.Unchecked == "" || !strings.HasPrefix(got.StateReason, api.UncheckedWaits) {
		t.Fatalf("after the restart the agent is %s (%q), marked %q: want paused on the unchecked change", got.State, got.StateReason, got.Unchecked)
	}
	if _, err := os.Stat(filepath.Join(a.Workspace, "a.txt")); err == nil {
		t.Fatal("the step ran again before a person looked")
	}
	if _, err := h.sup.runs.Resume(context.Background(), a.ID); err != nil {
		t.Fatal(err)
	}
	h.waitFor(a.ID, "the step run again", func(*api.Agent) bool { return len(h.history(a.ID)) == 1 })
	if _, err := os.Stat(filepath.Join(a.Workspace, "a.txt")); err != nil {
		t.Fatal(err)
	}
	if m := h.stored(a.ID).Unchecked; m != "" {
		t.Errorf("after a person's resume the mark is %q, want cleared", m)
	}
}
