package effect

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/commands/shell"
	"github.com/agentd/agentd/internal/testutil"
)

// modeTree is tree with each path's type and permission bits.
func modeTree(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	for _, line := range strings.Split(strings.TrimSuffix(tree(t, dir), "\n"), "\n") {
		rel, _, _ := strings.Cut(strings.TrimSuffix(line, "/"), " ")
		fi, err := os.Lstat(filepath.Join(dir, rel))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%v %s\n", fi.Mode(), line)
	}
	return b.String()
}

// The run ahead works on an overlay over the workspace, as root and as a daemon that is
// not root (in a user namespace of its own), never on a copy: the command finds an
// overlay at its working folder and the copy's folder stays empty. What it changes
// through the overlay's upper layer is captured exactly: applying the preview leaves
// the workspace as running the command on it does, for a deletion, a file renamed, a
// folder renamed, a mode changed, and a folder removed and made again (opaque: none of
// its old entries may show through).
func TestRunAheadOverAnOverlayIsCapturedExactly(t *testing.T) {
	testutil.AsRootAndNot(t, func(t *testing.T) {
		f := newFixture(t, shell.Options{})
		twin := filepath.Join(filepath.Dir(f.ws), "twin")
		for _, ws := range []string{f.ws, twin} {
			write(t, ws, map[string]string{"notes.txt": "one\ntwo\n", "old.txt": "gone soon\n", "keep/deep.txt": "deep\n",
				"keep/deeper/x.txt": "x\n", "run.sh": "echo hi\n", "sub/a.txt": "a\n"})
		}
		line := "stat -f -c %T .; rm old.txt; mv notes.txt renamed.txt; mv sub moved; chmod 751 run.sh; rm -rf keep && mkdir keep && echo fresh > keep/fresh.txt"
		eff, diff := f.run(t, line)
		if !eff.Appliable() {
			t.Fatalf("no preview: %+v", eff)
		}
		if !strings.HasPrefix(eff.Output, "overlayfs\n") || eff.Notice != "" {
			t.Errorf("the run ahead worked in a %q with notice %q, want an overlay", strings.SplitN(eff.Output, "\n", 2)[0], eff.Notice)
		}
		if names, err := os.ReadDir(filepath.Join(f.dir, "a-1", "view")); err != nil || len(names) > 0 {
			t.Errorf("the copy's folder holds %v (%v), want nothing: no copy under an overlay", names, err)
		}
		args, _ := json.Marshal(map[string]string{"command_line": line})
		if _, err := commands.Run(context.Background(), f.sh, commands.Env{Workspace: twin, AgentID: "a-1"}, args, commands.Limits{Timeout: time.Minute}); err != nil {
			t.Fatal(err)
		}
		if _, err := f.p.Apply(context.Background(), "a-1", f.ws, eff); err != nil {
			t.Fatal(err)
		}
		if got, want := modeTree(t, f.ws), modeTree(t, twin); got != want {
			t.Errorf("applying the preview made\n%s\nrunning the command made\n%s\ndiff shown:\n%s", got, want, diff)
		}
	})
}

// writingDuring is a command that, as it runs, first has someone else write in the
// workspace (a person editing, a helper): its run then sees what they wrote.
type writingDuring struct {
	commands.Command
	write func()
}

func (w writingDuring) Execute(ctx context.Context, env commands.Env, args json.RawMessage) (string, error) {
	w.write()
	return w.Command.Execute(ctx, env, args)
}

func (w writingDuring) EffectPreview() string {
	return w.Command.(commands.EffectPreviewer).EffectPreview()
}

func (w writingDuring) RunAheadMemory() int64 {
	return w.Command.(commands.EffectPreviewer).RunAheadMemory()
}

// A workspace that changes while its preview runs over it (the overlay's lower layer)
// is not the one the change was worked out against, and the run may have seen a mix of
// both: the preview says so and carries nothing to apply, so approving runs the
// command. A helper writing in its own folder (agents/), which an approval leaves
// alone, does not count. A copy is restored from the preview store, so its run saw the
// workspace as it was: its preview stands, and approving it once the workspace moved
// is refused as stale.
func TestAPreviewOverAWorkspaceChangedWhileItRanIsNotApplied(t *testing.T) {
	testutil.AsRootAndNot(t, func(t *testing.T) {
		for _, c := range []struct {
			name, path string
			mount      bool // over an overlay of the workspace, else in a copy
			appliable  bool
		}{
			{"overlay_a_person_edits_a_file", "notes.txt", true, false},
			{"overlay_a_helper_writes_in_its_folder", "agents/h/work.txt", true, true},
			{"copy_a_person_edits_a_file", "notes.txt", false, true},
		} {
			t.Run(c.name, func(t *testing.T) {
				if c.mount && !mayMount {
					t.Skip("the daemon may not mount here (not root): no overlay")
				}
				defer func(was bool) { mayMount = was }(mayMount)
				mayMount = c.mount
				f := newFixture(t, shell.Options{})
				write(t, f.ws, map[string]string{"agents/h/work.txt": "v1\n"})
				f.sh = writingDuring{Command: f.sh, write: func() { write(t, f.ws, map[string]string{c.path: "written during the run\n"}) }}
				eff, diff := f.run(t, "cat "+c.path+"; echo seen >> seen.txt")
				if eff.Appliable() != c.appliable {
					t.Fatalf("appliable = %v, want %v: %+v\n%s", eff.Appliable(), c.appliable, eff, diff)
				}
				switch {
				case !c.appliable:
					if !strings.Contains(eff.None, "the workspace changed while the preview ran (changed 1 file") {
						t.Errorf("the preview does not say the workspace moved under it: %q", eff.None)
					}
				case c.mount:
					if _, err := f.p.Apply(context.Background(), "a-1", f.ws, eff); err != nil {
						t.Errorf("apply after a helper wrote in its folder: %v", err)
					}
				default:
					if strings.Contains(eff.Output, "written during the run") || strings.Contains(diff, "written during the run") {
						t.Errorf("the copy's run saw what was written in the workspace during it:\n%s\n%s", eff.Output, diff)
					}
					if _, err := f.p.Apply(context.Background(), "a-1", f.ws, eff); !errors.Is(err, ErrStale) {
						t.Errorf("apply on a workspace that moved during the copy's run: %v, want ErrStale", err)
					}
				}
			})
		}
	})
}
