package effect

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
