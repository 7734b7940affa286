package agent

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/commands/shell"
	"github.com/agentd/agentd/daemon/config"
	"github.com/agentd/agentd/internal/testutil"
)

// previewHarness is a harness whose agents have execute_shell in a real sandbox without
// network, so their shell lines are run ahead; it returns it with the agent created.
func previewHarness(t *testing.T, lines ...string) (*harness, *api.Agent) {
	sh := realShellWith(t, shell.Options{})
	h := newHarness(t, func(o *Options) {
		o.Components = []commands.Component{commands.CommandList{ID: "shell", Cmds: commands.Set{sh}}}
	})
	var script []string
	for _, l := range lines {
		script = append(script, reply("execute_shell", map[string]string{"command_line": l}))
	}
	h.fake.Script(append(script, reply("finish", map[string]string{"reason": "done"}))...)
	return h, h.create(api.CreateAgentRequest{})
}

// A shell line's proposal shows what it printed and changed when run ahead on a copy;
// approving puts exactly that change in place — the random token the person saw — and
// the command does not run a second time.
func TestApprovingAPreviewedLineAppliesTheChangeShownAndRunsNothingTwice(t *testing.T) {
	h, a := previewHarness(t, "cat /proc/sys/kernel/random/uuid > token.txt; echo run >> runs.txt; echo hello")
	p := h.pending(a.ID)
	eff := p.Preview.Effect
	if !eff.Appliable() || !strings.HasPrefix(eff.Output, "hello") || eff.Summary != "changes 2 files (+2 −0)" {
		t.Fatalf("preview effect %+v, want the output and the two files", eff)
	}
	if _, err := os.Stat(filepath.Join(a.Workspace, "runs.txt")); err == nil {
		t.Fatal("the run ahead wrote to the workspace before anyone approved")
	}
	// The copy sits with the workspaces (it holds what they do, with their modes), not
	// in the state directory, whose files are all private.
	if _, err := os.Stat(filepath.Join(filepath.Dir(a.Workspace), ".previews", a.ID, "notes.txt")); err == nil {
		t.Error("the copy holds a file its workspace lacks")
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(a.Workspace), ".previews", a.ID)); err != nil {
		t.Errorf("the copy is not beside the workspaces: %v", err)
	}
	if _, err := h.decide(a.ID, p, "y"); err != nil {
		t.Fatal(err)
	}
	h.waitFor(a.ID, "the next proposal", func(a *api.Agent) bool { return a.Pending != nil && a.Pending.Command == "finish" })
	token, _ := os.ReadFile(filepath.Join(a.Workspace, "token.txt"))
	if len(token) == 0 || !strings.Contains(p.Preview.Diff, "+"+strings.TrimSpace(string(token))) {
		t.Errorf("token.txt holds %q, not the token the preview showed:\n%s", token, p.Preview.Diff)
	}
	if runs, _ := os.ReadFile(filepath.Join(a.Workspace, "runs.txt")); string(runs) != "run\n" {
		t.Errorf("runs.txt = %q: the command ran again on approval", runs)
	}
	eps := h.history(a.ID)
	if len(eps) != 1 || eps[0].Outcome != "succeeded" || !strings.Contains(eps[0].Result, "hello") || !strings.Contains(eps[0].Result, "was applied") {
		t.Errorf("history %+v, want one step with the output and what was applied", eps)
	}
}

// A workspace changed between the preview and the approval is caught: nothing is
// applied, and the person is asked again with the reason and the preview run again on
// the workspace as it is now (not the stale one), its followers shown the proposal as
// it is asked now; approving then applies that change.
func TestAWorkspaceChangedSinceThePreviewAsksAgainWithThePreviewRunAgain(t *testing.T) {
	h, a := previewHarness(t, "echo added >> notes.txt; echo ran >> runs.txt")
	followed := follow(t, h)
	p := h.pending(a.ID)
	if !p.Preview.Effect.Appliable() {
		t.Fatalf("no effect preview: %+v", p.Preview.Effect)
	}
	notes := filepath.Join(a.Workspace, "notes.txt")
	if err := os.WriteFile(notes, []byte("a person wrote this\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := h.decide(a.ID, p, "y"); err != nil {
		t.Fatal(err)
	}
	again := h.waitFor(a.ID, "the proposal asked again", func(a *api.Agent) bool {
		return a.State == api.StateAwaitingDecision && a.Pending != nil && a.Pending.Status == api.ProposalInterrupted
	})
	pv := again.Pending.Preview
	if !strings.Contains(again.StateReason, "changed since the preview") || !strings.Contains(again.StateReason, "run again") {
		t.Errorf("asked again with reason %q, want that the workspace changed and the preview was run again", again.StateReason)
	}
	if !pv.Effect.Appliable() || pv.Effect.From == p.Preview.Effect.From || !strings.Contains(pv.Diff, " a person wrote this") || !strings.Contains(pv.Diff, "+added") {
		t.Errorf("asked again with effect %+v and diff\n%s\nwant the preview run again on the workspace as it is now", pv.Effect, pv.Diff)
	}
	if body, _ := os.ReadFile(notes); string(body) != "a person wrote this\n" {
		t.Fatalf("notes.txt = %q after a refused apply", body)
	}
	// The followers' stream is delivered apart from the state the test waited on.
	if !testutil.Wait(10*time.Second, func() bool { return shownAskedAgain(followed(), again.Pending) }) {
		t.Errorf("no proposal event showed the proposal asked again, with its agent awaiting it: chat and follow keep the stale preview")
	}
	if _, err := h.decide(a.ID, again.Pending, "y"); err != nil {
		t.Fatal(err)
	}
	h.waitFor(a.ID, "the next proposal", func(a *api.Agent) bool { return a.Pending != nil && a.Pending.Command == "finish" })
	if body, _ := os.ReadFile(notes); string(body) != "a person wrote this\nadded\n" {
		t.Errorf("notes.txt = %q, want the change shown again applied to the workspace as it is now", body)
	}
	if runs, _ := os.ReadFile(filepath.Join(a.Workspace, "runs.txt")); string(runs) != "ran\n" {
		t.Errorf("runs.txt = %q: the approved change was not the one applied, or the command ran again", runs)
	}
	if eps := h.history(a.ID); len(eps) != 1 || !strings.Contains(eps[0].Result, "was applied") {
		t.Errorf("history %+v, want the step with the re-run preview's change applied", eps)
	}
}

// Effect previews turned off for an agent in config leave its proposals without one.
func TestEffectPreviewOffForAnAgent(t *testing.T) {
	sh := realShellWith(t, shell.Options{})
	off := false
	h := newHarness(t, func(o *Options) {
		o.Components = []commands.Component{commands.CommandList{ID: "shell", Cmds: commands.Set{sh}}}
		o.Agents = map[string]config.AgentOverride{"tester": {EffectPreview: &off}}
	})
	h.fake.Script(reply("execute_shell", map[string]string{"command_line": "touch x"}))
	a := h.create(api.CreateAgentRequest{})
	if p := h.pending(a.ID); p.Preview == nil || p.Preview.Effect != nil {
		t.Errorf("preview %+v, want the program's preview without an effect", p.Preview)
	}
}

// A line the policy refuses is not run ahead: the sandbox never sees it, and the copy the
// previews use holds nothing it would have made.
func TestRefusedLineIsNotRunAhead(t *testing.T) {
	sh := realShellWith(t, shell.Options{})
	h := newHarness(t, func(o *Options) {
		o.Components = []commands.Component{commands.CommandList{ID: "shell", Cmds: commands.Set{sh}}}
		o.Deny = []string{"execute_shell(touch *)"}
	})
	h.fake.Script(reply("execute_shell", map[string]string{"command_line": "touch ran-ahead"}))
	a := h.create(api.CreateAgentRequest{})
	h.waitFor(a.ID, "the refused step", func(a *api.Agent) bool { return a.StepsTotal >= 1 })
	var found []string
	filepath.WalkDir(filepath.Dir(a.Workspace), func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.Name() == "ran-ahead" {
			found = append(found, path)
		}
		return nil
	})
	if len(found) > 0 {
		t.Errorf("the refused line ran ahead: %v", found)
	}
}

// An agent's effect preview takes disk its budget counts: a run ahead that writes past
// what the budget leaves beside the workspace is stopped, the proposal says why there is
// no preview, and the usual approval applies (approving runs the command itself).
func TestRunAheadPastTheDiskBudgetGetsNoPreview(t *testing.T) {
	sh := realShellWith(t, shell.Options{})
	h := newHarness(t, func(o *Options) {
		o.Components = []commands.Component{commands.CommandList{ID: "shell", Cmds: commands.Set{sh}}}
		o.MaxDisk = config.Size(2 << 20)
	})
	h.fake.Script(reply("execute_shell", map[string]string{"command_line": "head -c 8388608 /dev/zero > big.bin; sleep 60"}))
	a := h.create(api.CreateAgentRequest{})
	eff := h.pending(a.ID).Preview.Effect
	if eff.Appliable() || !strings.Contains(eff.None, "its run ahead wrote past the") || !strings.Contains(eff.None, "its budget leaves a preview") {
		t.Fatalf("preview effect %+v, want none, saying the run ahead wrote past the disk budget", eff)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(a.Workspace), ".previews", a.ID, "big.bin")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("what the stopped run ahead wrote is still on the disk (%v)", err)
	}
}

// While a shell line runs ahead (it may hold the step a minute), the people following
// the agent see it previewing that proposal: a state event, thinking with the reason,
// comes before the proposal is shown.
func TestFollowersSeeTheAgentPreviewingBeforeTheProposal(t *testing.T) {
	sh := realShellWith(t, shell.Options{})
	h := newHarness(t, func(o *Options) {
		o.Components = []commands.Component{commands.CommandList{ID: "shell", Cmds: commands.Set{sh}}}
	})
	events, cancel, err := h.sup.agentViews.Subscribe("", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()
	h.fake.Script(reply("execute_shell", map[string]string{"command_line": "echo hi > a.txt"}))
	a := h.create(api.CreateAgentRequest{})
	deadline := time.After(30 * time.Second)
	previewing := false
	for {
		select {
		case e := <-events:
			if e.AgentID != a.ID || e.Agent == nil {
				continue
			}
			if e.Agent.State == api.StateThinking && e.Agent.StateReason == previewingReason("execute_shell") {
				previewing = true
			}
			if e.Agent.Pending != nil {
				if !previewing {
					t.Fatalf("the proposal was shown (%s event) with no event before it showing the agent previewing it", e.Type)
				}
				return
			}
		case <-deadline:
			t.Fatal("no event showed the agent with its proposal pending")
		}
	}
}

// shownAskedAgain reports whether a proposal event in events showed p as it is asked
// again (its status and preview run again), with its agent awaiting a decision on it.
func shownAskedAgain(events []api.Event, p *api.Proposal) bool {
	for _, e := range events {
		if e.Type == api.EventProposal && e.Proposal != nil && e.Proposal.ID == p.ID && e.Proposal.Ref() == p.Ref() && e.Proposal.Status == p.Status &&
			e.Agent != nil && e.Agent.State == api.StateAwaitingDecision && e.Agent.Pending != nil && e.Agent.Pending.Ref() == p.Ref() {
			return true
		}
	}
	return false
}

// TestProposalCarriesItsPreview: the diff is worked out against the workspace as it is
// when the model proposes, stored with the proposal, and the same after a restart even
// though the file changed since.
func TestProposalCarriesItsPreview(t *testing.T) {
	h := newHarness(t)
	h.fake.Script(reply("write_file", map[string]string{"path": "notes.txt", "contents": "one\nTWO\n"}))
	a := h.create(api.CreateAgentRequest{})
	p := h.pending(a.ID)
	want := "--- /dev/null\n+++ b/notes.txt\n@@ -0,0 +1,2 @@\n+one\n+TWO\n"
	if p.Preview == nil || p.Preview.Kind != api.PreviewDiff || p.Preview.Diff != want {
		t.Fatalf("preview = %+v, want the diff\n%s", p.Preview, want)
	}
	if err := os.WriteFile(filepath.Join(a.Workspace, "notes.txt"), []byte("changed since\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h.stop()
	h.start()
	got, err := h.sup.agentViews.Agent(context.Background(), a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Pending == nil || got.Pending.Preview == nil || got.Pending.Preview.Diff != want {
		t.Fatalf("after a restart the preview is %+v, want the one shown when proposed", got.Pending)
	}
}

// TestCommandWithoutPreviewHasNone: a command that says nothing more than its args gets
// no preview.
func TestCommandWithoutPreviewHasNone(t *testing.T) {
	h := newHarness(t)
	h.fake.Script(reply("finish", map[string]string{"reason": "done"}))
	a := h.create(api.CreateAgentRequest{})
	if p := h.pending(a.ID); p.Preview != nil {
		t.Fatalf("finish has a preview: %+v", p.Preview)
	}
}
