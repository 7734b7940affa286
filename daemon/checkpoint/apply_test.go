package checkpoint

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// A change worked out on a copy (restored there from the workspace's checkpoint) lands
// on the workspace only while it is as that checkpoint holds it; a workspace changed
// since is left alone and the error says how it changed.
func TestRestoreFromAppliesOnlyOnTheWorkspaceItStartedFrom(t *testing.T) {
	ws, cp := t.TempDir(), filepath.Join(t.TempDir(), "copy")
	s := openStore(t, Options{})
	writeFiles(t, ws, map[string]string{"a.txt": "one\n", "sub/b.txt": "bee\n"})
	from := mustCheckpoint(t, s, ws)
	if err := os.Mkdir(cp, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Restore(ctx, cp, from.ID); err != nil {
		t.Fatal(err)
	}
	writeFiles(t, cp, map[string]string{"a.txt": "one\ntwo\n", "new.txt": "fresh\n"})
	os.Symlink("/etc", filepath.Join(cp, "sub", "out"))
	want := listing(t, cp)
	to := mustCheckpoint(t, s, cp)

	writeFiles(t, ws, map[string]string{"sub/b.txt": "changed meanwhile\n"})
	changed := listing(t, ws)
	_, err := s.RestoreFrom(ctx, ws, from.ID, to.ID)
	var ce *ChangedError
	if !errors.As(err, &ce) || ce.Diff.Files != 1 || ce.Diff.Changes[0].Path != "sub/b.txt" {
		t.Fatalf("RestoreFrom on a changed workspace: %v, want a ChangedError naming sub/b.txt", err)
	}
	sameListing(t, "after a refused RestoreFrom", listing(t, ws), changed)

	writeFiles(t, ws, map[string]string{"sub/b.txt": "bee\n"}) // as it was, with a new mtime
	if _, err := s.RestoreFrom(ctx, ws, from.ID, to.ID); err != nil {
		t.Fatal(err)
	}
	sameListing(t, "after RestoreFrom", listing(t, ws), want)
}

// RemoveTree removes a tree whatever modes its folders were left with, and no link's target.
func TestRemoveTreeTakesLockedFoldersAndFollowsNoLink(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	writeFiles(t, dir, map[string]string{"v/locked/x": "x"})
	writeFiles(t, outside, map[string]string{"keep": "keep"})
	os.Symlink(outside, filepath.Join(dir, "v", "link"))
	os.Chmod(filepath.Join(dir, "v", "locked"), 0)
	if err := RemoveTree(dir, "v"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "v")); !os.IsNotExist(err) {
		t.Errorf("v is still there: %v", err)
	}
	if _, err := os.Stat(filepath.Join(outside, "keep")); err != nil {
		t.Errorf("the link's target lost a file: %v", err)
	}
}

// Applying twice is harmless: a workspace already at the target (a restore a crash
// interrupted, finished when the store opened again) is not refused as changed.
func TestRestoreFromOnAWorkspaceAlreadyThereIsDone(t *testing.T) {
	ws := t.TempDir()
	s := openStore(t, Options{})
	writeFiles(t, ws, map[string]string{"a.txt": "one\n"})
	from := mustCheckpoint(t, s, ws)
	writeFiles(t, ws, map[string]string{"a.txt": "two\n"})
	to := mustCheckpoint(t, s, ws)
	if _, err := s.RestoreFrom(ctx, ws, from.ID, to.ID); err != nil {
		t.Fatalf("RestoreFrom on a workspace already at its target: %v", err)
	}
	if body, _ := os.ReadFile(filepath.Join(ws, "a.txt")); string(body) != "two\n" {
		t.Errorf("a.txt = %q", body)
	}
}
