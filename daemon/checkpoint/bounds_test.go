package checkpoint

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A held checkpoint survives retention whatever the bounds say: the checkpoint before a
// big bad step stays restorable however many cheap steps come after it, where without
// Hold the byte bound and the count drop it.
func TestHeldCheckpointSurvivesManyCheapCheckpointsAfterIt(t *testing.T) {
	ws := t.TempDir()
	s := openStore(t, Options{KeepCount: 3, MaxStoreBytes: 10_000})
	writeFiles(t, ws, map[string]string{"precious": strings.Repeat("p", 6000)})
	bad := mustCheckpoint(t, s, ws) // what a bad step is about to destroy
	s.Hold([]ID{bad.ID})
	if err := os.Remove(filepath.Join(ws, "precious")); err != nil {
		t.Fatal(err)
	}
	for i := range 8 { // cheap steps, each a checkpoint of a few bytes
		writeFiles(t, ws, map[string]string{"f": fmt.Sprint(i)})
		mustCheckpoint(t, s, ws)
	}
	list, err := s.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) > 4 || list[0].ID != bad.ID {
		t.Fatalf("kept %v; want the held %d and at most the 3 newest", infoIDs(list), bad.ID)
	}
	if _, err := s.Restore(ctx, ws, bad.ID); err != nil {
		t.Fatalf("restoring the held checkpoint: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "precious")); err != nil || len(b) != 6000 {
		t.Fatalf("precious not restored: %d bytes, %v", len(b), err)
	}
	verifyStore(t, s)

	s.Hold(nil) // released: the next collection may drop it
	for i := range 4 {
		writeFiles(t, ws, map[string]string{"f": fmt.Sprint("again", i)})
		mustCheckpoint(t, s, ws)
	}
	if list, _ := s.List(ctx); list[0].ID == bad.ID {
		t.Fatalf("kept %v: a checkpoint no longer held is still kept past the bounds", infoIDs(list))
	}
}

// A workspace with more files and folders than MaxEntries costs a bounded walk: the
// checkpoint is Partial, a notice names what was left out and why, and a restore puts
// back what was captured and leaves the rest as it finds it.
func TestCheckpointPastMaxEntriesIsPartialAndSaysSo(t *testing.T) {
	ws := t.TempDir()
	files := map[string]string{}
	for i := range 10 {
		files[fmt.Sprintf("d%d/f", i)] = "x"
	}
	writeFiles(t, ws, files)
	s := openStore(t, Options{MaxEntries: 6})
	c, err := s.Checkpoint(ctx, ws)
	if err != nil {
		t.Fatal(err)
	}
	if !c.Partial || len(c.Notices) == 0 || !strings.Contains(c.Notices[0].Problem, "past the 6 files and folders a checkpoint captures") {
		t.Fatalf("checkpoint of 20 entries with MaxEntries 6: partial %v, notices %+v", c.Partial, c.Notices)
	}
	if p := c.Problem(); !strings.Contains(p, "cannot be rewound exactly") {
		t.Fatalf("Problem() = %q", p)
	}
	writeFiles(t, ws, map[string]string{"d0/f": "changed", "d9/f": "changed"})
	if _, err := s.Restore(ctx, ws, c.ID); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "d0", "f")); string(b) != "x" {
		t.Errorf("d0/f, captured, was not restored: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "d9", "f")); string(b) != "changed" {
		t.Errorf("d9/f, past the bound, was changed by the restore: %q", b)
	}
}
