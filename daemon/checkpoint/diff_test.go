package checkpoint

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd/agentd/internal/testutil"
)

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
	ws := t.TempDir()
	s := openStore(t, Options{})
	writeFiles(t, ws, map[string]string{"a": "1\n"})
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
	ws := t.TempDir()
	s := openStore(t, Options{})
	writeFiles(t, ws, map[string]string{"a.txt": "text\n", "pair1": "shared\n", "was-link": "x"})
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
