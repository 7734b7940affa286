package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var ctx = context.Background()

func TestRestorePutsBackFilesFoldersLinksAndModes(t *testing.T) {
	ws := t.TempDir()
	s := openStore(t, Options{})
	writeFiles(t, ws, map[string]string{"a.txt": "one\ntwo\n", "sub/b.txt": "bee\n", "sub/deep/c.bin": "\x00\x01"})
	os.Mkdir(filepath.Join(ws, "empty"), 0o750)
	os.Chmod(filepath.Join(ws, "sub/b.txt"), 0o600)
	os.Symlink("../a.txt", filepath.Join(ws, "sub/link"))
	os.Symlink("/etc/passwd", filepath.Join(ws, "outside"))
	os.Link(filepath.Join(ws, "a.txt"), filepath.Join(ws, "sub/hard"))
	want := listing(t, ws)
	c := mustCheckpoint(t, s, ws)

	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("changed\n"), 0o644)
	os.RemoveAll(filepath.Join(ws, "sub"))
	os.WriteFile(filepath.Join(ws, "sub"), []byte("a file where a folder was"), 0o644)
	os.Remove(filepath.Join(ws, "empty"))
	os.Mkdir(filepath.Join(ws, "new"), 0o755)
	writeFiles(t, ws, map[string]string{"new/x": "created since"})
	os.Remove(filepath.Join(ws, "outside"))
	os.Mkdir(filepath.Join(ws, "outside"), 0o755)

	r, err := s.Restore(ctx, ws, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	sameListing(t, "after restore", listing(t, ws), want)
	if r.Before.ID == c.ID || r.To != c.ID {
		t.Fatalf("restore reports before %d, to %d; want a new checkpoint before, to %d", r.Before.ID, r.To, c.ID)
	}
	if r.Diff.Files == 0 {
		t.Fatalf("restore reports no change: %s", r.Diff.Summary())
	}
}

func TestRestoreCanBeUndoneThroughItsBeforeCheckpoint(t *testing.T) {
	ws := t.TempDir()
	s := openStore(t, Options{})
	writeFiles(t, ws, map[string]string{"a": "first"})
	c1 := mustCheckpoint(t, s, ws)
	writeFiles(t, ws, map[string]string{"a": "second", "b/c": "new"})
	now := listing(t, ws)
	r, err := s.Restore(ctx, ws, c1.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Restore(ctx, ws, r.Before.ID); err != nil {
		t.Fatal(err)
	}
	sameListing(t, "after undoing the restore", listing(t, ws), now)
}

func TestCheckpointOfUnchangedWorkspaceWritesNothing(t *testing.T) {
	ws := t.TempDir()
	s := openStore(t, Options{})
	writeFiles(t, ws, map[string]string{"a": "x", "d/b": "y"})
	c := settled(t, s, ws)
	again := mustCheckpoint(t, s, ws)
	if again.ID != c.ID {
		t.Fatalf("checkpoint of an unchanged workspace is %d, want the latest (%d)", again.ID, c.ID)
	}
	list, _ := s.List(ctx)
	if n := len(list); n > 3 {
		t.Fatalf("%d checkpoints kept of a workspace that never changed after settling", n)
	}
}

// A file rewritten with the same size and its old mtime put back still changed its
// ctime: the stat cache must see it.
func TestCheckpointSeesRewriteThatKeepsSizeAndMtime(t *testing.T) {
	ws := t.TempDir()
	s := openStore(t, Options{})
	p := filepath.Join(ws, "a")
	writeFiles(t, ws, map[string]string{"a": "aaaa"})
	fi, _ := os.Stat(p)
	c1 := settled(t, s, ws)
	os.WriteFile(p, []byte("bbbb"), 0o644)
	os.Chtimes(p, fi.ModTime(), fi.ModTime())
	c2 := mustCheckpoint(t, s, ws)
	d, err := s.Diff(ctx, c1.ID, c2.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Changes) != 1 || d.Changes[0].Kind != Modified {
		t.Fatalf("rewrite with the same size and mtime not seen: %s", d.Text())
	}
}

func TestCheckpointStoresOnlyNewContent(t *testing.T) {
	ws := t.TempDir()
	s := openStore(t, Options{})
	files := map[string]string{}
	for i := range 50 {
		files[filepath.Join("d", string(rune('a'+i%26))+strings.Repeat("x", i/26))] = strings.Repeat("content ", 100) + string(rune(i))
	}
	writeFiles(t, ws, files)
	settled(t, s, ws)
	writeFiles(t, ws, map[string]string{"d/a": "new content"})
	c := mustCheckpoint(t, s, ws)
	// The new file, its folder's listing and the root's: well under one more copy of d.
	if c.NewBytes > 5000 {
		t.Fatalf("changing one small file stored %d bytes", c.NewBytes)
	}
}

func TestCheckpointOverBudgetIsPartialAndNamesWhatWasLeftOut(t *testing.T) {
	tests := []struct {
		name    string
		opt     Options
		missing string
		problem string
	}{
		{"file_over_file_limit", Options{MaxFileBytes: 1000}, "big", "over the limit of 1000 bytes per file"},
		{"step_over_step_limit", Options{MaxStepBytes: 1500}, "big", "this checkpoint's new content past its limit of 1500 bytes"},
		{"workspace_over_store_limit", Options{MaxStoreBytes: 1500}, "big", "past the store's limit of 1500 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := t.TempDir()
			s := openStore(t, tt.opt)
			writeFiles(t, ws, map[string]string{"a": strings.Repeat("a", 900), "big": strings.Repeat("b", 2000)})
			c, err := s.Checkpoint(ctx, ws)
			if err != nil {
				t.Fatal(err)
			}
			if !c.Partial || len(c.Notices) != 1 || c.Notices[0].Path != tt.missing || !c.Notices[0].Lost ||
				!strings.Contains(c.Notices[0].Problem, tt.problem) {
				t.Fatalf("checkpoint: partial %v, notices %+v; want %s named as not captured (%s)", c.Partial, c.Notices, tt.missing, tt.problem)
			}
			if p := c.Problem(); !strings.Contains(p, "cannot be rewound") || !strings.Contains(p, tt.missing) {
				t.Fatalf("Problem() = %q", p)
			}
			// What was captured is restored; what was not is left as it is.
			writeFiles(t, ws, map[string]string{"a": "changed", "big": "changed too"})
			r, err := s.Restore(ctx, ws, c.ID)
			if err != nil {
				t.Fatal(err)
			}
			if b, _ := os.ReadFile(filepath.Join(ws, "a")); len(b) != 900 {
				t.Fatalf("a not restored: %q", b)
			}
			if b, _ := os.ReadFile(filepath.Join(ws, "big")); string(b) != "changed too" {
				t.Fatalf("big, never captured, was changed by the restore: %q", b)
			}
			if len(r.Notices) != 1 || r.Notices[0].Path != "big" || !r.Notices[0].Lost {
				t.Fatalf("restore notices %+v; want big left as it is", r.Notices)
			}
		})
	}
}

func TestRetentionKeepsTheNewestAndRemovesWhatOnlyDroppedOnesHeld(t *testing.T) {
	ws := t.TempDir()
	s := openStore(t, Options{KeepCount: 3})
	var ids []ID
	for i := range 6 {
		writeFiles(t, ws, map[string]string{"f": strings.Repeat("v", 100+i)})
		ids = append(ids, mustCheckpoint(t, s, ws).ID)
	}
	list, err := s.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 3 || list[0].ID != ids[3] || list[2].ID != ids[5] {
		t.Fatalf("kept %v; want the 3 newest of %v", infoIDs(list), ids)
	}
	if _, err := s.Restore(ctx, ws, ids[0]); !errors.Is(err, ErrNotFound) {
		t.Fatalf("restore of a dropped checkpoint: %v, want ErrNotFound", err)
	}
	verifyStore(t, s)
	// Each kept checkpoint holds one file and two listings at most; nothing else remains.
	objs, _ := os.ReadDir(filepath.Join(s.dir, "objects"))
	if len(objs) > 3*2 {
		t.Fatalf("%d objects in the store after retention; the 3 kept checkpoints reach at most 6", len(objs))
	}
}

func TestRetentionNeverKeepsMoreThanKeepCountAndDropsATenthAtOnce(t *testing.T) {
	ws := t.TempDir()
	s := openStore(t, Options{KeepCount: 20})
	var kept []int
	for i := range 25 {
		writeFiles(t, ws, map[string]string{"f": strings.Repeat("v", 100+i)})
		mustCheckpoint(t, s, ws)
		list, _ := s.List(ctx)
		kept = append(kept, len(list))
	}
	// 1…20 as they are taken; the 21st drops the oldest 3 (to 18 with it); then 19, 20.
	want := []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 18, 19, 20, 18, 19}
	if fmt.Sprint(kept) != fmt.Sprint(want) {
		t.Fatalf("checkpoints kept after each: %v\nwant %v", kept, want)
	}
	verifyStore(t, s)
}

func TestRetentionByBytesDropsOldestButNeverTheNewest(t *testing.T) {
	ws := t.TempDir()
	s := openStore(t, Options{MaxStoreBytes: 10_000})
	var ids []ID
	for i := range 4 {
		writeFiles(t, ws, map[string]string{"f": strings.Repeat(string(rune('a'+i)), 4000)})
		ids = append(ids, mustCheckpoint(t, s, ws).ID)
	}
	list, _ := s.List(ctx)
	if len(list) != 2 || list[1].ID != ids[3] {
		t.Fatalf("kept %v of %v; want the 2 newest (4,000 bytes each within 10,000)", infoIDs(list), ids)
	}
	verifyStore(t, s)
}

func infoIDs(list []Info) []ID {
	var ids []ID
	for _, c := range list {
		ids = append(ids, c.ID)
	}
	return ids
}

func TestOpenRefusesAStoreInUse(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, Options{}); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("second Open: %v, want in use", err)
	}
	s.Close()
	s2, err := Open(dir, Options{})
	if err != nil {
		t.Fatalf("Open after Close: %v", err)
	}
	s2.Close()
}

func TestCheckpointRefusesAStoreInsideTheWorkspace(t *testing.T) {
	ws := t.TempDir()
	s, err := Open(filepath.Join(ws, "store"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Checkpoint(ctx, ws); err == nil || !strings.Contains(err.Error(), "inside the workspace") {
		t.Fatalf("checkpoint: %v, want a refusal", err)
	}
}

func TestCheckpointsSurviveReopening(t *testing.T) {
	ws := t.TempDir()
	dir := t.TempDir()
	s, _ := Open(dir, Options{})
	writeFiles(t, ws, map[string]string{"a": "1"})
	c, _ := s.Checkpoint(ctx, ws)
	s.Close()
	writeFiles(t, ws, map[string]string{"a": "2"})
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Restore(ctx, ws, c.ID); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "a")); string(b) != "1" {
		t.Fatalf("a = %q after restore, want 1", b)
	}
	if got, _ := s.Get(ctx, c.ID); !got.Time.Round(time.Millisecond).Equal(c.Time.Round(time.Millisecond)) {
		t.Fatalf("checkpoint time %v after reopening, want %v", got.Time, c.Time)
	}
}
