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

// Approving applies the very tree the preview captured and the person saw: when the
// preview store was swapped since (here rebuilt, holding another command's change under
// the same checkpoint ids), Apply fails closed — nothing changes, and the error says
// the store no longer holds the change that was shown.
func TestApplyFailsClosedWhenThePreviewStoreNoLongerHoldsTheChangeShown(t *testing.T) {
	f := newFixture(t, shell.Options{})
	shown, _ := f.run(t, "echo shown > shown.txt")
	if !shown.Appliable() || len(shown.ToRoot) != 64 {
		t.Fatalf("preview: %+v, want an appliable effect with its root hash", shown)
	}
	f.p.Close()
	if err := os.RemoveAll(filepath.Join(f.dir, "a-1")); err != nil {
		t.Fatal(err)
	}
	f.p = New(Options{Dir: f.dir})
	other, _ := f.run(t, "echo swapped > swapped.txt")
	if other.From != shown.From || other.To != shown.To {
		t.Fatalf("the rebuilt store did not reuse the ids (%d→%d, was %d→%d): the test shows nothing", other.From, other.To, shown.From, shown.To)
	}
	before := tree(t, f.ws)
	_, err := f.p.Apply(context.Background(), "a-1", f.ws, shown)
	if !errors.Is(err, ErrStale) || !strings.Contains(err.Error(), "no longer holds the change that was shown") {
		t.Fatalf("apply from a swapped store: %v, want it refused saying why", err)
	}
	if after := tree(t, f.ws); after != before {
		t.Errorf("a refused apply changed the workspace:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}
