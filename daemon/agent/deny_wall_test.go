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
	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/commands/shell"
	"github.com/agentd/agentd/daemon/checkpoint"
	"github.com/agentd/agentd/daemon/store"
	"github.com/agentd/agentd/internal/testutil"
)

// denyWallHarness is a harness with checkpoints and execute_shell in a real sandbox,
// whose agents' write-deny rules are deny, previewed when preview is set; it returns it
// with the agent created and the workspace holding files.
func denyWallHarness(t *testing.T, preview bool, deny []string, files map[string]string, lines ...string) (*harness, *api.Agent) {
	return denyWallHarnessWith(t, checkpoint.Options{}, preview, deny, files, lines...)
}

// denyWallHarnessWith is denyWallHarness with the checkpoint stores' bounds store.
func denyWallHarnessWith(t *testing.T, store checkpoint.Options, preview bool, deny []string, files map[string]string, lines ...string) (*harness, *api.Agent) {
	sh := realShellWith(t, shell.Options{})
	h := newHarness(t, withCheckpoints, func(o *Options) {
		o.Components = []commands.Component{commands.CommandList{ID: "shell", Cmds: commands.Set{sh}}}
		o.Deny, o.EffectPreview, o.Checkpoints.Store = deny, preview, store
	})
	var script []string
	for _, l := range lines {
		script = append(script, reply("execute_shell", map[string]string{"command_line": l}))
	}
	h.fake.Script(append(script, reply("finish", map[string]string{"reason": "done"}))...)
	a := h.create(api.CreateAgentRequest{})
	for p, body := range files {
		os.MkdirAll(filepath.Join(a.Workspace, filepath.Dir(p)), 0o755)
		if err := os.WriteFile(filepath.Join(a.Workspace, p), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return h, a
}

// runStep approves a's pending shell line and returns the episode it ended with, once
// finish is proposed.
func runStep(t *testing.T, h *harness, a *api.Agent) api.Episode {
	t.Helper()
	if _, err := h.decide(a.ID, h.pending(a.ID), "y"); err != nil {
		t.Fatal(err)
	}
	h.waitFor(a.ID, "finish proposed", func(a *api.Agent) bool { return a.Pending != nil && a.Pending.Command == "finish" })
	eps := h.history(a.ID)
	return eps[len(eps)-1]
}

// wantPutBack checks that each of paths is gone from ws after the step: put back.
func wantPutBack(t *testing.T, ws string, paths ...string) {
	t.Helper()
	for _, p := range paths {
		if _, err := os.Lstat(filepath.Join(ws, p)); !os.IsNotExist(err) {
			t.Errorf("%s after the step: %v, want it put back (gone)", p, err)
		}
	}
}

// A shell step creating a new file under a wildcard write-deny rule, which no read-only
// bind covers, has it put back at its end; the step's other change stays, and the
// result says what was put back and which rule denied it, so the model is told.
func TestShellStepCreatingAFileAWildcardRuleDeniesIsPutBack(t *testing.T) {
	h, a := denyWallHarness(t, false, []string{"write_file(*.toml)"}, nil, "echo EVIL > app.toml; mkdir -p d && echo EVIL > d/b.toml; echo ok > notes.txt")
	ep := runStep(t, h, a)
	wantPutBack(t, a.Workspace, "app.toml", "d/b.toml")
	if b, err := os.ReadFile(filepath.Join(a.Workspace, "notes.txt")); err != nil || string(b) != "ok\n" {
		t.Errorf("notes.txt, which no rule denies, was not kept: %q, %v", b, err)
	}
	for _, want := range []string{"put back app.toml: write_file(*.toml) denies writing it", "put back d/b.toml: write_file(*.toml) denies writing it"} {
		if !strings.Contains(ep.Result, want) {
			t.Errorf("the step's result does not say %q:\n%s", want, ep.Result)
		}
	}
}

// The wall leaves the helpers' folder alone: what a helper writes in its own workspace
// during its parent's step, at a path the parent's rules deny, is the helper's to keep
// (it owns that workspace, and may be running git there), and the parent's own denied
// write is put back without waiting for the helper's git to end.
func TestPutBackLeavesTheHelpersFolderAlone(t *testing.T) {
	h, a := denyWallHarness(t, false, []string{"write_file(*.toml)"}, map[string]string{"agents/h/README": "helper's\n"},
		"touch started; while [ ! -e go ]; do sleep 0.05; done; echo EVIL > app.toml; echo ok > notes.txt")
	helper := filepath.Join(a.Workspace, commands.HelpersFolder, "h")
	if _, err := h.decide(a.ID, h.pending(a.ID), "y"); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, time.Minute, "the step to start", func() bool {
		_, err := os.Stat(filepath.Join(a.Workspace, "started"))
		return err == nil
	})
	if err := os.WriteFile(filepath.Join(helper, "Cargo.toml"), []byte("[package]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	end, err := commands.GitRun(context.Background(), helper) // the helper's bounded run, past the step's end
	if err != nil {
		t.Fatal(err)
	}
	defer end()
	if err := os.WriteFile(filepath.Join(a.Workspace, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	h.waitFor(a.ID, "finish proposed", func(a *api.Agent) bool { return a.Pending != nil && a.Pending.Command == "finish" })
	eps := h.history(a.ID)
	result := eps[len(eps)-1].Result
	wantPutBack(t, a.Workspace, "app.toml")
	if b, err := os.ReadFile(filepath.Join(helper, "Cargo.toml")); err != nil || string(b) != "[package]\n" {
		t.Errorf("the helper's agents/h/Cargo.toml after its parent's step: %q, %v; want it kept\n%s", b, err, result)
	}
	if strings.Contains(result, "agents/") {
		t.Errorf("the parent's step's result speaks of its helpers' folder:\n%s", result)
	}
}

// A folder a rule names that is not there when the step starts has nothing bound
// read-only: a folder renamed into its place brings a denied file, which is put back,
// and the file the person had there is kept.
func TestRenamingAFolderOntoADeniedPathIsPutBack(t *testing.T) {
	h, a := denyWallHarness(t, false, []string{"write_file(config/*.toml)"}, map[string]string{"staging/app.toml": "EVIL\n", "staging/readme": "hi\n"},
		"mv staging config")
	ep := runStep(t, h, a)
	wantPutBack(t, a.Workspace, "config/app.toml")
	if b, err := os.ReadFile(filepath.Join(a.Workspace, "config", "readme")); err != nil || string(b) != "hi\n" {
		t.Errorf("config/readme, which no rule denies, was not kept: %q, %v", b, err)
	}
	if want := "put back config/app.toml: write_file(config/*.toml) denies writing it"; !strings.Contains(ep.Result, want) {
		t.Errorf("the step's result does not say %q:\n%s", want, ep.Result)
	}
}

// A preview whose change touches a denied path is never applied: the proposal says which
// path and which rule, approving runs the command itself, and its end puts the path back.
func TestPreviewTouchingADeniedPathIsNotApplied(t *testing.T) {
	h, a := denyWallHarness(t, true, []string{"write_file(*.toml)"}, nil, "echo EVIL > app.toml; echo ok > notes.txt")
	p := h.pending(a.ID)
	if eff := p.Preview.Effect; eff.Appliable() || !strings.Contains(eff.None, "app.toml: write_file(*.toml) denies writing it") {
		t.Fatalf("the preview of a change to a denied path is appliable or does not say why not: %+v", eff)
	}
	ep := runStep(t, h, a)
	wantPutBack(t, a.Workspace, "app.toml")
	if _, err := os.Stat(filepath.Join(a.Workspace, "notes.txt")); err != nil {
		t.Errorf("the command did not run itself: %v", err)
	}
	if !strings.Contains(ep.Result, "put back app.toml") {
		t.Errorf("the step's result does not say app.toml was put back:\n%s", ep.Result)
	}
}

// A link on the way to a rule's folder does not carry a write past the rule: one made
// during the step is put back with what was written through it, and through one there
// before the step the file written is put back by the name the rule gives it.
func TestWriteThroughALinkToADeniedFolderIsPutBack(t *testing.T) {
	h, a := denyWallHarness(t, false, []string{"write_file(config/*.toml)"}, nil, "mkdir real && ln -s real config && echo EVIL > config/app.toml")
	ep := runStep(t, h, a)
	wantPutBack(t, a.Workspace, "config", "real/app.toml")
	if !strings.Contains(ep.Result, "put back config: a link there would take writes to config/") || !strings.Contains(ep.Result, "put back real/app.toml: write_file(config/*.toml) denies writing it") {
		t.Errorf("the step's result does not say the link and the file were put back:\n%s", ep.Result)
	}

	h, a = denyWallHarness(t, false, []string{"write_file(config/*.toml)"}, map[string]string{"real/app.toml": "safe\n"}, "echo EVIL > config/app.toml")
	if err := os.Symlink("real", filepath.Join(a.Workspace, "config")); err != nil {
		t.Fatal(err)
	}
	ep = runStep(t, h, a)
	if b, err := os.ReadFile(filepath.Join(a.Workspace, "real", "app.toml")); err != nil || string(b) != "safe\n" {
		t.Errorf("real/app.toml, written through the link config, was not put back: %q, %v\n%s", b, err, ep.Result)
	}
}

// A file moved onto a denied path goes back where it was: the denied path gets what it
// held before (nothing, here) and the moved file its old place, rather than being lost.
func TestFileMovedOntoADeniedPathGoesBackWhereItWas(t *testing.T) {
	h, a := denyWallHarness(t, false, []string{"write_file(*.toml)"}, map[string]string{"notes/draft.txt": "mine\n"}, "mv notes/draft.txt app.toml")
	ep := runStep(t, h, a)
	wantPutBack(t, a.Workspace, "app.toml")
	if b, err := os.ReadFile(filepath.Join(a.Workspace, "notes", "draft.txt")); err != nil || string(b) != "mine\n" {
		t.Errorf("notes/draft.txt, moved onto the denied app.toml, is not back where it was: %q, %v\n%s", b, err, ep.Result)
	}
	if want := "put back notes/draft.txt, a file moved onto a denied path, to where it was"; !strings.Contains(ep.Result, want) {
		t.Errorf("the step's result does not say %q:\n%s", want, ep.Result)
	}
}

// A step changing more paths than a diff lists (checkpoint.MaxChanges) still has what
// it wrote to a denied path put back: the folders the rules hold (or the whole
// workspace, for a rule starting with a wildcard) are walked, not the cut list.
func TestDeniedWritePastTheListedChangesIsPutBack(t *testing.T) {
	for _, tc := range []struct{ name, rule, path string }{
		{"wildcard_first", "write_file(*.toml)", "zz.toml"},
		{"rooted_folder", "write_file(zconf/*.env)", "zconf/a.env"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, a := denyWallHarness(t, false, []string{tc.rule}, nil,
				"mkdir many zconf && for i in $(seq 2100); do echo $i > many/f$i.txt; done; echo EVIL > "+tc.path)
			ep := runStep(t, h, a)
			if _, err := os.Lstat(filepath.Join(a.Workspace, tc.path)); !os.IsNotExist(err) {
				t.Errorf("%s, written past the first 2000 changes, after the step: %v, want it put back (gone)\n%s", tc.path, err, ep.Result)
			}
			if _, err := os.Stat(filepath.Join(a.Workspace, "many", "f2100.txt")); err != nil {
				t.Errorf("many/f2100.txt, which no rule denies, was not kept: %v", err)
			}
			if want := "put back " + tc.path + ": " + tc.rule + " denies writing it"; !strings.Contains(ep.Result, want) {
				t.Errorf("the step's result does not say %q:\n%s", want, ep.Result)
			}
		})
	}
}

// Write-deny rules that cannot be read fail closed: the step's whole change is put
// back, since nothing tells what it may keep, and its result says so and why.
func TestUnreadableDenyRulesPutTheWholeStepBack(t *testing.T) {
	h, a := denyWallHarness(t, false, []string{"write_file(*.toml)"}, map[string]string{"keep.txt": "old\n"}, "echo new > keep.txt; echo ok > notes.txt")
	h.sup.checkpoints.rules = func(*store.Tx, *store.Agent) (commands.PathRules, error) {
		return nil, errors.New("permissions table unreadable")
	}
	ep := runStep(t, h, a)
	if b, err := os.ReadFile(filepath.Join(a.Workspace, "keep.txt")); err != nil || string(b) != "old\n" {
		t.Errorf("keep.txt after a step whose rules could not be read: %q, %v; want it put back", b, err)
	}
	if _, err := os.Lstat(filepath.Join(a.Workspace, "notes.txt")); !os.IsNotExist(err) {
		t.Errorf("notes.txt after a step whose rules could not be read: %v, want it put back (gone)", err)
	}
	if want := "the step's whole change was put back, as it could not be checked against the write-deny rules: permissions table unreadable"; !strings.Contains(ep.Result, want) {
		t.Errorf("the step's result does not say %q:\n%s", want, ep.Result)
	}
}
