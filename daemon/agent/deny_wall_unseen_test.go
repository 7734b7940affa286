package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/daemon/checkpoint"
)

// runStepUntilPaused approves a's pending shell line and returns the episode it ended
// with and the agent, once the step's end paused it for a person.
func runStepUntilPaused(t *testing.T, h *harness, a *api.Agent) (api.Episode, *api.Agent) {
	t.Helper()
	if _, err := h.decide(a.ID, h.pending(a.ID), "y"); err != nil {
		t.Fatal(err)
	}
	now := h.waitFor(a.ID, "the step's end to pause the agent", func(a *api.Agent) bool { return a.State == api.StatePaused })
	eps := h.history(a.ID)
	return eps[len(eps)-1], now
}

// A folder made during the step past the files a checkpoint captures hides what was
// written in it: it is taken as denied and, not being there before, put back (removed)
// with the denied file in it; the step's other change stays and the agent goes on.
func TestDeniedWriteInAFolderTheCheckpointsCouldNotCaptureIsPutBack(t *testing.T) {
	h, a := denyWallHarnessWith(t, checkpoint.Options{MaxEntries: 4}, false, []string{"write_file(*.toml)"}, map[string]string{"a/1": "1", "a/2": "2"},
		"mkdir d && echo EVIL > d/agentd.toml; echo 3 > a/3")
	ep := runStep(t, h, a)
	if _, err := os.Lstat(filepath.Join(a.Workspace, "d")); !os.IsNotExist(err) {
		t.Errorf("d, the folder the checkpoint could not capture, after the step: %v, want it put back (gone)\n%s", err, ep.Result)
	}
	if b, err := os.ReadFile(filepath.Join(a.Workspace, "a", "3")); err != nil || string(b) != "3\n" {
		t.Errorf("a/3, which no rule denies, was not kept: %q, %v", b, err)
	}
	if want := "put back d: the checkpoints could not capture it (is past the 4 files and folders"; !strings.Contains(ep.Result, want) {
		t.Errorf("the step's result does not say %q:\n%s", want, ep.Result)
	}
}

// A folder at a deny rule's root that no checkpoint captured, before the step or after,
// cannot be put back: the step's result says what could not be checked, and the agent
// pauses for a person rather than go on past a write the rules may deny.
func TestDeniedWriteInAFolderNoCheckpointCapturedPausesTheAgent(t *testing.T) {
	h, a := denyWallHarnessWith(t, checkpoint.Options{MaxEntries: 2}, false, []string{"write_file(*.toml)"},
		map[string]string{"a/1": "1", "lib/helper.py": "safe\n"}, "echo EVIL > lib/agentd.toml")
	ep, now := runStepUntilPaused(t, h, a)
	want := "could not put back lib: the checkpoints could not capture it"
	if !strings.Contains(ep.Result, want) || !strings.Contains(ep.Result, "a person must look at the workspace") {
		t.Errorf("the step's result does not say %q and that a person must look:\n%s", want, ep.Result)
	}
	if !strings.Contains(now.StateReason, want) {
		t.Errorf("the paused agent's reason does not say %q: %q", want, now.StateReason)
	}
}

// A state dir whose disk is full (MinFreeBytes past what it has) keeps the checkpoints
// from capturing new content: a denied file they never captured cannot be put back, so
// the step's result says so and the agent pauses; a denied file the step created is
// still put back (removed), as its before — nothing — is known.
func TestDeniedWriteTheFullStateDirCouldNotCapturePausesTheAgent(t *testing.T) {
	h, a := denyWallHarnessWith(t, checkpoint.Options{MinFreeBytes: 1 << 60}, false, []string{"write_file(*.toml)"},
		map[string]string{"app.toml": "safe\n"}, "echo EVIL > app.toml; echo EVIL > new.toml; echo ok > notes.txt")
	ep, now := runStepUntilPaused(t, h, a)
	if _, err := os.Lstat(filepath.Join(a.Workspace, "new.toml")); !os.IsNotExist(err) {
		t.Errorf("new.toml after the step: %v, want it put back (gone)\n%s", err, ep.Result)
	}
	want := "could not put back app.toml: write_file(*.toml) denies writing it, as no checkpoint before the step captured it"
	if !strings.Contains(ep.Result, want) || strings.Contains(ep.Result, "put back app.toml: write_file") && !strings.Contains(ep.Result, "could not put back app.toml") {
		t.Errorf("the step's result does not say %q:\n%s", want, ep.Result)
	}
	if !strings.Contains(now.StateReason, "could not put back app.toml") {
		t.Errorf("the paused agent's reason does not say app.toml could not be put back: %q", now.StateReason)
	}
}

// A step whose end's checkpoint fails (its store cannot write) has a change nothing can
// check against the deny rules: its result says so and the agent pauses for a person.
func TestStepWhoseEndCheckpointFailsPausesTheAgent(t *testing.T) {
	h, a := denyWallHarness(t, false, []string{"write_file(*.toml)"}, nil, "echo EVIL > app.toml")
	walks := 0
	testHookWalk = func() {
		if walks++; walks == 2 { // the step's end: its store loses the folder it writes in
			os.RemoveAll(filepath.Join(h.sup.checkpoints.opt.Dir, a.ID, "tmp"))
		}
	}
	t.Cleanup(func() { testHookWalk = nil })
	ep, now := runStepUntilPaused(t, h, a)
	want := "what this step wrote could not be checked against the write-deny rules, as its end's checkpoint failed"
	if !strings.Contains(ep.Result, want) {
		t.Errorf("the step's result does not say %q:\n%s", want, ep.Result)
	}
	if !strings.Contains(now.StateReason, want) {
		t.Errorf("the paused agent's reason does not say %q: %q", want, now.StateReason)
	}
}
