package agent

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/daemon/run"
)

// nestDeep is a line that nests 2,100 folders named d, past the depth the disk walk
// descends, then runs rest.
func nestDeep(rest string) string {
	return `python3 -c 'import os
for _ in range(2100):
    os.mkdir("d"); os.chdir("d")' && ` + rest
}

// A step that leaves its workspace beyond what the disk walk can count (folders nested
// past its depth) cannot be shown within the disk budget: the agent pauses before its
// next step, saying why and the fix, stays paused while that holds, and resumes once a
// person removed them.
func TestAgentWhoseWorkspaceCannotBeMeasuredPauses(t *testing.T) {
	h := newHarness(t, withShell(t), func(o *Options) { o.AgentBudget = run.Budget{MaxDisk: 64 << 20} })
	h.fake.Script(shellReply(nestDeep("echo nested")))
	listForever(h)
	a := autoAgent(h, 10)
	h.approve(a.ID, "execute_shell")
	got := pausedByBudget(h, a.ID)
	for _, want := range []string{"could not be measured", "within its disk budget of 64 MiB", "nested deeper than 2048", "rm -rf d", a.Workspace, "`agentctl resume tester`", "agentctl budget tester --max-disk 0"} {
		if !strings.Contains(got.StateReason, want) {
			t.Errorf("reason %q: want it to say %q", got.StateReason, want)
		}
	}
	if got.StepsTotal != 1 {
		t.Errorf("%d steps; want the pause before the second", got.StepsTotal)
	}
	if _, err := h.sup.runs.Resume(context.Background(), a.ID); !errors.Is(err, api.ErrConflict) || !strings.Contains(err.Error(), "could not be measured") {
		t.Errorf("resume while it cannot be measured: %v, want a conflict saying so", err)
	}
	if err := os.RemoveAll(filepath.Join(a.Workspace, "d")); err != nil {
		t.Fatal(err)
	}
	if _, err := h.sup.runs.Resume(context.Background(), a.ID); err != nil {
		t.Fatalf("resume once the folders went: %v; want it measured again and resumed", err)
	}
	h.waitFor(a.ID, "steps past the pause", func(a *api.Agent) bool { return a.StepsTotal >= 3 })
}

// A command that makes its workspace beyond what the disk walk can count while it runs
// is cut then, its result saying why, rather than left to write unmeasured.
func TestCommandCutWhenItsWorkspaceCannotBeMeasured(t *testing.T) {
	// The folders take 8.2 MiB, under the budget, so that a walk while they are made
	// does not cut for the size; the file written after them takes the file system past
	// it, and the walk that follows cannot count them.
	h := newHarness(t, withShell(t), func(o *Options) { o.AgentBudget = run.Budget{MaxDisk: 12 << 20} })
	h.fake.Script(shellReply(nestDeep("head -c 16777216 /dev/zero > big; sleep 120 && echo finished")))
	listForever(h)
	a := autoAgent(h, 10)
	h.approve(a.ID, "execute_shell")
	pausedByBudget(h, a.ID)
	eps := h.history(a.ID)
	if len(eps) != 1 || !strings.Contains(eps[0].Result, "cut off: its workspace could not be measured while it ran") ||
		!strings.Contains(eps[0].Result, "rm -rf d") || strings.Contains(eps[0].Result, "finished") {
		t.Fatalf("history %+v; want the command cut, saying why and the fix", eps)
	}
}
