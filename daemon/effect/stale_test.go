package effect

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/commands/shell"
)

// The preview store may give its checkpoint ids again to other trees (it is rebuilt,
// or a crash loses its newest records): a preview whose change ends in the tree the
// store holds under To, but started from another tree than the one under From, is
// refused, naming the start, and nothing changes. The end trees are made alike here
// by hand, as only such a coincidence gets past To's check.
func TestApplyFailsClosedWhenThePreviewStoreHoldsAnotherStartUnderFrom(t *testing.T) {
	f := newFixture(t, shell.Options{})
	shown, _ := f.run(t, "echo shown > shown.txt")
	if !shown.Appliable() || len(shown.FromRoot) != 64 {
		t.Fatalf("preview: %+v, want an appliable effect with its start tree's root hash", shown)
	}
	f.p.Close()
	if err := os.RemoveAll(filepath.Join(f.dir, "a-1")); err != nil {
		t.Fatal(err)
	}
	write(t, f.ws, map[string]string{"notes.txt": "another start\n"})
	f.p = New(Options{Dir: f.dir})
	other, _ := f.run(t, "echo swapped > swapped.txt")
	if other.From != shown.From || other.To != shown.To || other.FromRoot == shown.FromRoot {
		t.Fatalf("the rebuilt store did not give the ids again to another start (%d→%d from %.12s, was %d→%d from %.12s): the test shows nothing",
			other.From, other.To, other.FromRoot, shown.From, shown.To, shown.FromRoot)
	}
	shown.ToRoot = other.ToRoot
	before := tree(t, f.ws)
	_, err := f.p.Apply(context.Background(), "a-1", f.ws, shown)
	if !errors.Is(err, ErrStale) || !strings.Contains(err.Error(), "no longer holds the workspace the change was worked out on") {
		t.Fatalf("apply over another start under the same ids: %v, want it refused naming the start", err)
	}
	if after := tree(t, f.ws); after != before {
		t.Errorf("a refused apply changed the workspace:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

// A proposal stored before previews recorded their start tree cannot be checked
// against it: approving it is refused as stale (the preview runs again and is asked
// again), saying why, and nothing changes.
func TestApplyRefusesAPreviewWithoutItsStartTree(t *testing.T) {
	f := newFixture(t, shell.Options{})
	eff, _ := f.run(t, "echo fresh > new.txt")
	eff.FromRoot = ""
	before := tree(t, f.ws)
	_, err := f.p.Apply(context.Background(), "a-1", f.ws, eff)
	if !errors.Is(err, ErrStale) || !strings.Contains(err.Error(), "before previews recorded the workspace they start from") {
		t.Fatalf("apply of a preview without its start tree: %v, want ErrStale saying why", err)
	}
	if after := tree(t, f.ws); after != before {
		t.Errorf("a refused apply changed the workspace:\nbefore:\n%s\nafter:\n%s", before, after)
	}
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

// A workspace that changes while its preview runs over it (the overlay's lower layer)
// is not the one the change was worked out against, and the run may have seen a mix of
// both: the preview says so and carries nothing to apply, so approving runs the
// command. A helper writing in its own folder (agents/), which an approval leaves
// alone, does not count. A copy is restored from the preview store, so its run saw the
// workspace as it was: its preview stands, and approving it once the workspace moved
// is refused as stale.
func TestAPreviewOverAWorkspaceChangedWhileItRanIsNotApplied(t *testing.T) {
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
}
