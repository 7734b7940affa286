package agent

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/commands/shell"
)

// A proposal a +write pattern would run ahead in its bounded profile, then left to a
// person (the watchdog caught a loop), is shown without that run's change: its preview
// says why and approving runs the line itself, in the person's profile, as shown.
func TestProposalLeftToPersonShowsNoChangeRunAheadBounded(t *testing.T) {
	sh := realShellWith(t, shell.Options{})
	h := newHarness(t, func(o *Options) {
		o.Components = []commands.Component{commands.CommandList{ID: "shell", Cmds: commands.Set{sh}}}
		o.Allow = []string{"execute_shell(python3 -m json.tool *)+write", "execute_shell(rm *)+write"} // rm, json.tool, rm, json.tool: a loop
	})
	tool := reply("execute_shell", map[string]string{"command_line": "python3 -m json.tool in.json out.json"})
	rm := reply("execute_shell", map[string]string{"command_line": "rm -f out.json"})
	h.fake.Script(rm, tool, rm, tool, reply("finish", map[string]string{"reason": "done"}))
	a := h.createPlanted(hostileJSONWorkspace(true))
	ag := h.waitFor(a.ID, "a person asked", func(a *api.Agent) bool {
		return a.Pending != nil && (a.State == api.StateAwaitingDecision || a.State == api.StatePaused)
	})
	p := ag.Pending
	if p.Preview == nil || p.Preview.Effect == nil {
		t.Fatalf("the asked proposal %s %s has no effect preview", p.Command, p.Args)
	}
	if eff := p.Preview.Effect; eff.Appliable() || eff.Profile != "" || eff.None != boundedPreviewReason || p.Preview.Diff != "" {
		t.Fatalf("asked of a person with effect %+v, diff %q: want the bounded run dropped (%q), no diff", eff, p.Preview.Diff, boundedPreviewReason)
	}
	lines, _ := p.Preview.Render()
	if shown := strings.Join(lines, "\n"); strings.Contains(shown, "approving applies") || !strings.Contains(shown, boundedPreviewReason) {
		t.Errorf("the person is shown:\n%s\nwant why there is no change to apply, and no claim that approving applies one", shown)
	}
	if _, err := h.decide(a.ID, p, "y"); err != nil {
		t.Fatal(err)
	}
	h.sup.runs.Resume(context.Background(), a.ID)
	h.waitFor(a.ID, "the approved step ran", func(x *api.Agent) bool { return len(h.history(a.ID)) >= p.Step })
	// Approving ran the line itself, in the person's profile: as the preview said.
	if _, err := os.Stat(filepath.Join(a.Workspace, "PWNED")); err != nil {
		t.Errorf("the approved line did not run itself in the person's profile: %v", err)
	}
}
