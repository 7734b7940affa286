package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/testutil"
)

var ctx = context.Background()

func TestRestorePutsBackFilesFoldersLinksAndModes(t *testing.T) {
	s, ws := storeWithFiles(t, map[string]string{"a.txt": "one\ntwo\n", "sub/b.txt": "bee\n", "sub/deep/c.bin": "\x00\x01"})
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
	s, ws := storeWithFiles(t, map[string]string{"a": "first"})
	c1 := mustCheckpoint(t, s, ws)
	writeFiles(t, ws, map[string]string{"a": "second", "b/c": "new"})
	now := listing(t, ws)
	r, err := s.Restore(ctx, ws, c1.ID)
	if err != nil {
		t.Fatal(err)
	}
	mustRestore(t, s, ws, r.Before.ID)
	sameListing(t, "after undoing the restore", listing(t, ws), now)
}

func TestCheckpointOfUnchangedWorkspaceWritesNothing(t *testing.T) {
	s, ws := storeWithFiles(t, map[string]string{"a": "x", "d/b": "y"})
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
	s := mustOpen(t, dir, Options{})
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
	s := mustOpen(t, filepath.Join(ws, "store"), Options{})
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
	s = mustOpen(t, dir, Options{})
	defer s.Close()
	mustRestore(t, s, ws, c.ID)
	if b, _ := os.ReadFile(filepath.Join(ws, "a")); string(b) != "1" {
		t.Fatalf("a = %q after restore, want 1", b)
	}
	if got, _ := s.Get(ctx, c.ID); !got.Time.Round(time.Millisecond).Equal(c.Time.Round(time.Millisecond)) {
		t.Fatalf("checkpoint time %v after reopening, want %v", got.Time, c.Time)
	}
}

// diffScenario makes one change of every kind between two checkpoints.
func diffScenario(t *testing.T) (s *Store, ws string, from, to Info) {
	ws = t.TempDir()
	s = openStore(t, Options{})
	writeFiles(t, ws, map[string]string{
		"a.txt":   "one\ntwo\nthree\nfour\nfive\n",
		"old.txt": "going\n",
		"run.sh":  "#!/bin/sh\necho hi\n",
		"bin.dat": "\x00\x01\x02",
		"big.log": strings.Repeat("log line\n", 200_000),
		"x":       "a file, then a folder\n",
	})
	os.Symlink("a.txt", filepath.Join(ws, "link"))
	from = mustCheckpoint(t, s, ws)
	writeFiles(t, ws, map[string]string{
		"a.txt":   "one\n2\nthree\nfour\nfive\nsix\n",
		"new.txt": "hello\nworld\n",
		"bin.dat": "\x00\x01\x03",
		"big.log": strings.Repeat("log line\n", 200_001),
	})
	os.Remove(filepath.Join(ws, "old.txt"))
	os.Chmod(filepath.Join(ws, "run.sh"), 0o755)
	os.Remove(filepath.Join(ws, "link"))
	os.Symlink("new.txt", filepath.Join(ws, "link"))
	os.Remove(filepath.Join(ws, "x"))
	writeFiles(t, ws, map[string]string{"x/inner": "inside\n"})
	os.Mkdir(filepath.Join(ws, "empty"), 0o755)
	to = mustCheckpoint(t, s, ws)
	return s, ws, from, to
}

func TestDiffNamesEveryKindOfChangeInPathOrder(t *testing.T) {
	s, _, from, to := diffScenario(t)
	d, err := s.Diff(ctx, from.ID, to.ID)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range d.Changes {
		got = append(got, string(c.Kind)+" "+c.Path)
	}
	want := []string{
		"modified a.txt", "modified big.log", "modified bin.dat", "created empty", "modified link",
		"created new.txt", "deleted old.txt", "mode changed run.sh", "type changed x", "created x/inner",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("changes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if s := d.Summary(); s != "changed 9 files and 1 folder (+5 −3)" {
		t.Fatalf("Summary() = %q", s)
	}
	byPath := map[string]Change{}
	for _, c := range d.Changes {
		byPath[c.Path] = c
	}
	if c := byPath["bin.dat"]; !c.Binary || c.Unified != "" {
		t.Fatalf("bin.dat: %+v; want it named binary, no text diff", c)
	}
	if c := byPath["big.log"]; !strings.Contains(c.Note, "too large to diff") || c.Unified != "" {
		t.Fatalf("big.log: note %q; want it summarised as too large", c.Note)
	}
	if c := byPath["a.txt"]; c.Added != 2 || c.Removed != 1 || !strings.Contains(c.Unified, "+six\n") {
		t.Fatalf("a.txt: +%d −%d\n%s", c.Added, c.Removed, c.Unified)
	}
	if c := byPath["run.sh"]; c.OldMode != 0o644 || c.NewMode != 0o755 {
		t.Fatalf("run.sh: mode %o → %o", c.OldMode, c.NewMode)
	}
	if c := byPath["x"]; c.OldType != "file" || c.NewType != "folder" || c.Removed != 1 {
		t.Fatalf("x: %+v; want a file of one line become a folder", c)
	}
	testutil.Golden(t, "testdata/diff.txt", []byte(d.Text()))
	again, _ := s.Diff(ctx, from.ID, to.ID)
	if again.Text() != d.Text() {
		t.Fatal("the same diff rendered twice differs")
	}
}

func TestDiffLiveShowsWhatChangedSinceACheckpointWithoutKeepingOne(t *testing.T) {
	s, ws := storeWithFiles(t, map[string]string{"a": "1\n"})
	c := mustCheckpoint(t, s, ws)
	writeFiles(t, ws, map[string]string{"a": "1\n2\n", "b": "new\n"})
	d, err := s.DiffLive(ctx, ws, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	if d.From != c.ID || d.To != 0 || d.Summary() != "changed 2 files (+2 −0)" {
		t.Fatalf("DiffLive: from %d to %d, %s", d.From, d.To, d.Summary())
	}
	if list, _ := s.List(ctx); len(list) != 1 {
		t.Fatalf("DiffLive kept a checkpoint: %v", infoIDs(list))
	}
	same, _ := s.DiffLive(ctx, ws, mustCheckpoint(t, s, ws).ID)
	if same.Summary() != "no changes" || same.Text() != "no changes\n" {
		t.Fatalf("DiffLive against a checkpoint of now: %q", same.Text())
	}
}

// What a unified diff cannot show is said on the change's line: where a created symlink
// points, a created entry's mode (setuid included), which file a new name is a hard
// link of; content that is not shown (binary) is named again as not fully shown.
func TestDiffShowsSymlinkTargetsModesBinaryAndHardLinks(t *testing.T) {
	s, ws := storeWithFiles(t, map[string]string{"a.txt": "text\n", "pair1": "shared\n", "was-link": "x"})
	os.Link(filepath.Join(ws, "pair1"), filepath.Join(ws, "pair2"))
	os.Symlink("/etc/passwd", filepath.Join(ws, "old-link"))
	from := mustCheckpoint(t, s, ws)
	os.Symlink("../../home/user/.ssh/authorized_keys", filepath.Join(ws, "keys"))
	writeFiles(t, ws, map[string]string{"tool": "#!/bin/sh\n", "blob.bin": "\x7fELF\x00\x01"})
	os.Chmod(filepath.Join(ws, "tool"), 0o755|os.ModeSetuid)
	os.Link(filepath.Join(ws, "a.txt"), filepath.Join(ws, "alias"))
	os.Remove(filepath.Join(ws, "pair2"))
	writeFiles(t, ws, map[string]string{"pair2": "shared\n"})
	os.Remove(filepath.Join(ws, "old-link"))
	os.Mkdir(filepath.Join(ws, "private"), 0o700)
	to := mustCheckpoint(t, s, ws)
	d, err := s.Diff(ctx, from.ID, to.ID)
	if err != nil {
		t.Fatal(err)
	}
	text := d.Text()
	for _, want := range []string{
		"created symlink keys (mode 0777) (→ ../../home/user/.ssh/authorized_keys)",
		"created file tool (mode 4755) (setuid or setgid: not applied) (+1 −0)",
		"created folder private (mode 0700)",
		"created file alias (mode 0644) (a hard link of a.txt) (+1 −0)",
		"modified file pair2 (no longer a hard link of pair1)",
		"deleted symlink old-link (was → /etc/passwd)",
		"not fully shown: blob.bin (binary: 6 bytes)",
	} {
		if !strings.Contains(text, want+"\n") {
			t.Errorf("the diff lacks %q:\n%s", want, text)
		}
	}
	testutil.Golden(t, "testdata/diff-hidden.txt", []byte(text))
}

// A store that captures a new folder each time (a preview's view under another
// /proc/PID/root) keeps a bounded cache of the folders' latest checkpoints.
func TestAStoreCapturingManyFoldersKeepsABoundedCacheOfTheirLatest(t *testing.T) {
	s := openStore(t, Options{})
	for i := range 3 * lastOfMax {
		ws := t.TempDir()
		writeFiles(t, ws, map[string]string{"a": strconv.Itoa(i)})
		mustCheckpoint(t, s, ws)
		if len(s.lastOf) > lastOfMax {
			t.Fatalf("after %d folders the cache holds %d, want at most %d", i+1, len(s.lastOf), lastOfMax)
		}
	}
}
