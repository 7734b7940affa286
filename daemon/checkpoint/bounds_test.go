package checkpoint

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
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
	mustRestore(t, s, ws, c.ID)
	if b, _ := os.ReadFile(filepath.Join(ws, "d0", "f")); string(b) != "x" {
		t.Errorf("d0/f, captured, was not restored: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "d9", "f")); string(b) != "changed" {
		t.Errorf("d9/f, past the bound, was changed by the restore: %q", b)
	}
}

// sparseStep rewrites the workspace's sparse files, each with one distinct byte near its
// end: a few KiB of the workspace's blocks, size MiB each by their size.
func sparseStep(t *testing.T, ws string, step, files, size int) {
	t.Helper()
	for i := 0; i < files; i++ {
		f, err := os.Create(filepath.Join(ws, fmt.Sprintf("f%d", i)))
		if err != nil {
			t.Fatal(err)
		}
		f.Truncate(int64(size) << 20)
		f.WriteAt(fmt.Appendf(nil, "step %d file %d", step, i), int64(size)<<20-32)
		f.Close()
	}
}

// blocks is what dir takes on disk, in blocks, as du counts it.
func blocks(t *testing.T, dir string) int64 {
	var n int64
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil {
			n += fi.Sys().(*syscall.Stat_t).Blocks * 512
		}
		return nil
	})
	return n
}

// TestSparseStepsCostTheStoreTheirBlocksAndHeldOnesStopAtTheHardCap: a sparse file is
// stored sparse (what it takes on disk, not its size), restored byte for byte; the held
// checkpoints take the store past MaxStoreBytes, never past twice it: the step that
// would is Partial and says so.
func TestSparseStepsCostTheStoreTheirBlocksAndHeldOnesStopAtTheHardCap(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, dir, Options{MaxStoreBytes: 64 << 20})
	defer s.Close()
	ws := t.TempDir()
	var ids []ID
	var last Info
	for step := 0; step < 6; step++ {
		sparseStep(t, ws, step, 2, 20) // 40 MiB of size a step
		c, err := s.Checkpoint(context.Background(), ws)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, c.ID)
		s.Hold(ids) // the daemon holds the last keep_steps steps' checkpoints
		last = c
	}
	if got := blocks(t, dir); got > 8<<20 {
		t.Errorf("the store takes %d bytes on disk for a workspace of %d: sparse files are stored at full size", got, blocks(t, ws))
	}
	if s.Size() > 2*(64<<20) {
		t.Errorf("the store counts %d bytes, past twice its bound of %d", s.Size(), 64<<20)
	}
	if !last.Partial || !strings.Contains(last.Problem(), "hard limit") {
		t.Errorf("the step past the hard cap: partial %v, %q; want partial naming the hard limit", last.Partial, last.Problem())
	}
	sparseStep(t, ws, 99, 2, 20)
	if _, err := s.Restore(context.Background(), ws, ids[0]); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "f1")); len(b) != 20<<20 || !strings.Contains(string(b[len(b)-32:]), "step 0 file 1") {
		t.Errorf("a sparse file restored as %d bytes ending %q", len(b), b[max(len(b)-32, 0):])
	}
}

// TestCheckpointKeepsTheStateDirsFreeSpaceFloor: new content that would leave the state
// dir's file system less free than MinFreeBytes is not captured, and the checkpoint says
// why.
func TestCheckpointKeepsTheStateDirsFreeSpaceFloor(t *testing.T) {
	s := mustOpen(t, t.TempDir(), Options{MinFreeBytes: 1 << 60})
	defer s.Close()
	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("new content\n"), 0o644)
	c, err := s.Checkpoint(context.Background(), ws)
	if err != nil {
		t.Fatal(err)
	}
	if !c.Partial || !strings.Contains(c.Problem(), "free disk") {
		t.Errorf("partial %v, %q; want partial naming the state dir's free space", c.Partial, c.Problem())
	}
}
