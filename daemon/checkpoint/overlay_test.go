package checkpoint

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// mountOverlay mounts an overlay of lower, with its upper layer on a tmpfs, as an
// effect preview's quota does, but renaming a folder as overlayfs does where
// redirect_dir is on, and returns where it is mounted and its upper layer; both are
// unmounted when the test ends. It skips where the test may not mount (not root).
func mountOverlay(t *testing.T, lower string) (merged, upper string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skipf("no overlay here (euid %d): only a daemon that may mount captures one", os.Geteuid())
	}
	dir := t.TempDir()
	layers, merged := filepath.Join(dir, "layers"), filepath.Join(dir, "merged")
	for _, d := range []string{layers, merged} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := unix.Mount("tmpfs", layers, "tmpfs", 0, "size=16m,mode=0700"); err != nil {
		t.Skipf("no tmpfs here: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(layers, unix.MNT_DETACH) })
	upper, work := filepath.Join(layers, "upper"), filepath.Join(layers, "work")
	for _, d := range []string{upper, work} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := unix.Mount("overlay", merged, "overlay", 0, "lowerdir="+lower+",upperdir="+upper+",workdir="+work+",redirect_dir=on"); err != nil {
		t.Skipf("no overlay here: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(merged, unix.MNT_DETACH) })
	return merged, upper
}

// A checkpoint of an overlay that reads only what its upper layer holds is the one a
// walk of the whole overlay takes: files changed, created, deleted, a mode changed, a
// symlink, a new folder, a folder deleted, one deleted and made again (opaque), one
// renamed over another with a file of the same name (redirected), a file only touched. Nothing changed, it is the lower layer's checkpoint.
func TestAnOverlayCheckpointHoldsWhatAWalkOfItFinds(t *testing.T) {
	lower := t.TempDir()
	writeFiles(t, lower, map[string]string{"keep/a.txt": "a\n", "keep/b.txt": "b\n", "old.txt": "old\n", "mode.txt": "m\n",
		"gone/x.txt": "x\n", "gone/deep/y.txt": "y\n", "swap/before.txt": "before\n", "moved/m.txt": "moved\n", "renamed/m.txt": "was here\n",
		"touched.txt": "t\n", "untouched/u.txt": "u\n"})
	s := openStore(t, Options{})
	ctx := context.Background()
	base := mustCheckpoint(t, s, lower)
	merged, upper := mountOverlay(t, lower)
	same, err := s.CheckpointWithin(ctx, merged, 1<<20, &Overlay{Upper: upper, Lower: base.ID})
	if err != nil || same.ID != base.ID {
		t.Fatalf("nothing changed: checkpoint %d (%v), want the lower layer's, %d", same.ID, err, base.ID)
	}
	in := func(p string) string { return filepath.Join(merged, p) }
	writeFiles(t, merged, map[string]string{"keep/a.txt": "a, changed\n", "new/deep/n.txt": "new\n"})
	for _, err := range []error{os.Remove(in("old.txt")), os.Chmod(in("mode.txt"), 0o600), os.RemoveAll(in("gone")),
		os.Symlink("../outside", in("keep/link")), os.RemoveAll(in("swap/before.txt")), os.Remove(in("swap")),
		os.Mkdir(in("swap"), 0o755), os.WriteFile(in("swap/after.txt"), []byte("after\n"), 0o644),
		os.Chtimes(in("touched.txt"), base.Time, base.Time)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := errors.Join(os.RemoveAll(in("renamed")), os.Rename(in("moved"), in("renamed"))); err != nil {
		t.Fatal(err)
	}
	got, err := s.CheckpointWithin(ctx, merged, 1<<20, &Overlay{Upper: upper, Lower: base.ID})
	if err != nil || got.Partial {
		t.Fatalf("overlay checkpoint: %+v, %v", got, err)
	}
	walked := mustCheckpoint(t, s, merged)
	if d, err := s.Diff(ctx, got.ID, walked.ID); err != nil || len(d.Changes) > 0 {
		t.Fatalf("the overlay checkpoint and the walk differ: %v\n%s", err, d.Text())
	}
	if got.Files != walked.Files || got.Bytes != walked.Bytes {
		t.Errorf("overlay checkpoint counts %d files, %d bytes; the walk %d, %d", got.Files, got.Bytes, walked.Files, walked.Bytes)
	}
	d, err := s.Diff(ctx, base.ID, got.ID)
	if err != nil || d.Files < 6 {
		t.Fatalf("the change is not all there: %v\n%s", err, d.Text())
	}
}

// What the upper layer does not hold is not read: it is taken as the lower layer's
// checkpoint holds it, so a file put in the lower layer behind the checkpoint's back
// is not seen, while what the upper layer holds is.
func TestAnOverlayCheckpointReadsOnlyWhatTheUpperLayerHolds(t *testing.T) {
	lower := t.TempDir()
	writeFiles(t, lower, map[string]string{"untouched/u.txt": "u\n", "changed/c.txt": "c\n"})
	s := openStore(t, Options{})
	ctx := context.Background()
	base := mustCheckpoint(t, s, lower)
	writeFiles(t, lower, map[string]string{"untouched/behind.txt": "not in the checkpoint\n"})
	merged, upper := mountOverlay(t, lower)
	writeFiles(t, merged, map[string]string{"changed/c.txt": "c, changed\n"})
	got, err := s.CheckpointWithin(ctx, merged, 1<<20, &Overlay{Upper: upper, Lower: base.ID})
	if err != nil {
		t.Fatal(err)
	}
	d, err := s.Diff(ctx, base.ID, got.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Changes) != 1 || d.Changes[0].Path != "changed/c.txt" || d.Changes[0].Kind != Modified {
		t.Fatalf("want only changed/c.txt modified, got:\n%s", d.Text())
	}
}
