package agent

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentd/agentd/api"
)

// A whole run's rewind is named by the id its dry run showed (the run's), as a chat
// button sends it back.
func TestWholeRunRewindIsNamedByTheIDItsDryRunShowed(t *testing.T) {
	h := newHarness(t, withCheckpoints)
	ctx := context.Background()
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
	plan, err := h.sup.rewinds.Rewind(ctx, a.Name, api.RewindRequest{Run: run, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	done, err := h.rewind(a.Name, api.RewindRequest{ID: plan.Restore.ID, By: "ana"})
	if err != nil {
		t.Fatalf("rewinding by the whole run's id %s: %v", plan.Restore.ID, err)
	}
	if _, err := os.Stat(filepath.Join(a.Workspace, "a.txt")); !done.Done || !os.IsNotExist(err) {
		t.Errorf("after the whole run's rewind: done=%v, a.txt: %v; want it gone", done.Done, err)
	}
}
