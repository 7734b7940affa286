package agent

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/api"
)

// rewind asks for req's dry run, then applies it with the workspace the dry run showed
// (Rewind.From as RewindRequest.Shown), as every front end does.
func (h *harness) rewind(ref string, req api.RewindRequest) (*api.Rewind, error) {
	dry := req
	dry.DryRun = true
	plan, err := h.sup.rewinds.Rewind(context.Background(), ref, dry)
	if err != nil {
		return nil, err
	}
	req.Shown = plan.From
	return h.sup.rewinds.Rewind(context.Background(), ref, req)
}

// dryRun is the dry run of rewinding agent ref as req asks.
func (h *harness) dryRun(ref string, req api.RewindRequest) *api.Rewind {
	h.t.Helper()
	req.DryRun = true
	plan, err := h.sup.rewinds.Rewind(context.Background(), ref, req)
	if err != nil {
		h.t.Fatal(err)
	}
	return plan
}

// A rewind applies what its dry run showed: when the workspace changed between the dry
// run and the confirm, the confirm is refused with what to do, and the workspace keeps
// the change; a confirm that names the workspace as it is applies.
func TestRewindRefusesAWorkspaceChangedSinceTheDryRunShowedIt(t *testing.T) {
	h := newHarness(t, withCheckpoints)
	ctx := context.Background()
	a := writeSteps(t, h, 1)
	plan := h.dryRun(a.Name, api.RewindRequest{To: 1})
	if len(plan.From) != 64 {
		t.Fatalf("the dry run names no workspace root: From = %q", plan.From)
	}
	late := filepath.Join(a.Workspace, "late.txt")
	if err := os.WriteFile(late, []byte("written after the dry run"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := h.sup.rewinds.Rewind(ctx, a.Name, api.RewindRequest{To: 1, Shown: plan.From[:16], By: "ana"})
	if !errors.Is(err, api.ErrConflict) || !strings.Contains(err.Error(), "the workspace changed since the rewind was shown") ||
		!strings.Contains(err.Error(), "ask again") {
		t.Fatalf("confirm after the workspace changed: %v", err)
	}
	if _, err := os.Stat(late); err != nil {
		t.Fatalf("a refused rewind removed late.txt: %v", err)
	}
	if _, err := os.Stat(filepath.Join(a.Workspace, "f1.txt")); err != nil {
		t.Fatalf("a refused rewind changed the workspace: %v", err)
	}
	again := h.dryRun(a.Name, api.RewindRequest{To: 1})
	done, err := h.sup.rewinds.Rewind(ctx, a.Name, api.RewindRequest{To: 1, Shown: again.From, By: "ana"})
	if err != nil || !done.Done {
		t.Fatalf("confirm of a fresh dry run: %+v, %v", done, err)
	}
	if _, err := os.Stat(late); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the rewind shown with late.txt did not remove it: %v", err)
	}
}

// A capture holds file times too, so a file only touched since the dry run gives the
// workspace another root: the confirm still applies, since nothing a diff shows (what
// the person was shown) changed.
func TestRewindAppliesWhenOnlyFileTimesChangedSinceTheDryRun(t *testing.T) {
	h := newHarness(t, withCheckpoints)
	ctx := context.Background()
	a := writeSteps(t, h, 1)
	plan := h.dryRun(a.Name, api.RewindRequest{To: 1})
	old := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := os.Chtimes(filepath.Join(a.Workspace, "f1.txt"), old, old); err != nil {
		t.Fatal(err)
	}
	if again, err := h.sup.rewinds.Rewind(ctx, a.Name, api.RewindRequest{To: 1, DryRun: true}); err != nil || again.From == plan.From {
		t.Fatalf("touching f1.txt did not give the workspace another root (%v), so this checks nothing", err)
	}
	done, err := h.sup.rewinds.Rewind(ctx, a.Name, api.RewindRequest{To: 1, Shown: plan.From, By: "ana"})
	if err != nil || !done.Done {
		t.Fatalf("confirm of a workspace whose content is as shown: %+v, %v", done, err)
	}
}

// A confirm without the workspace it was shown (an older client) or with something
// that is no dry run's root is refused with the fix, and changes nothing.
func TestRewindWithoutTheShownWorkspaceIsRefusedWithTheFix(t *testing.T) {
	h := newHarness(t, withCheckpoints)
	ctx := context.Background()
	a := writeSteps(t, h, 1)
	for shown, want := range map[string]string{
		"":                 "ask with dry_run first and send its from back as shown",
		"abc":              "want 16 to 64 lowercase hex characters",
		"ABCDEF0123456789": "want 16 to 64 lowercase hex characters",
		"0000000000000000": "the workspace changed since the rewind was shown",
	} {
		_, err := h.sup.rewinds.Rewind(ctx, a.Name, api.RewindRequest{To: 1, Shown: shown})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("rewind with shown %q: %v; want %q", shown, err, want)
		}
	}
	if _, err := os.Stat(filepath.Join(a.Workspace, "f1.txt")); err != nil {
		t.Fatalf("a refused rewind changed the workspace: %v", err)
	}
}

// A whole run's rewind is named by the id its dry run showed (the run's), as a chat
// button sends it back.
func TestWholeRunRewindIsNamedByTheIDItsDryRunShowed(t *testing.T) {
	h := newHarness(t, withCheckpoints)
	h.fake.Script(
		reply("write_file", map[string]string{"path": "a.txt", "contents": "a\n"}),
		reply("finish", map[string]string{"reason": "done"}))
	a := h.create(api.CreateAgentRequest{})
	for range 2 {
		if _, err := h.decide(a.ID, h.pending(a.ID), "y"); err != nil {
			t.Fatal(err)
		}
	}
	run := h.waitFor(a.ID, "end", func(a *api.Agent) bool { return a.State == api.StateIdle }).RunID
	plan := h.dryRun(a.Name, api.RewindRequest{Run: run})
	done, err := h.rewind(a.Name, api.RewindRequest{ID: plan.Restore.ID, By: "ana"})
	if err != nil {
		t.Fatalf("rewinding by the whole run's id %s: %v", plan.Restore.ID, err)
	}
	if _, err := os.Stat(filepath.Join(a.Workspace, "a.txt")); !done.Done || !os.IsNotExist(err) {
		t.Errorf("after the whole run's rewind: done=%v, a.txt: %v; want it gone", done.Done, err)
	}
}
