package checkpoint

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentd/agentd/commands"
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
	mustRestore(t, s, cp, from.ID)
	writeFiles(t, cp, map[string]string{"a.txt": "one\ntwo\n", "new.txt": "fresh\n"})
	os.Symlink("/etc", filepath.Join(cp, "sub", "out"))
	to := mustCheckpoint(t, s, cp)

	writeFiles(t, ws, map[string]string{"sub/b.txt": "changed meanwhile\n"})
	changed := listing(t, ws)
	_, err := s.RestoreFrom(ctx, ws, from.ID, to.ID)
	var ce *ChangedError
	if !errors.As(err, &ce) || ce.Diff.Files != 1 || ce.Diff.Changes[0].Path != "sub/b.txt" {
		t.Fatalf("RestoreFrom on a changed workspace: %v, want a ChangedError naming sub/b.txt", err)
	}
	sameListing(t, "after a refused RestoreFrom", listing(t, ws), changed)

	// As it was again, but a different file with a new time: still not the workspace the
	// change was worked out on.
	writeFiles(t, ws, map[string]string{"sub/b.txt": "bee\n"})
	_, err = s.RestoreFrom(ctx, ws, from.ID, to.ID)
	if !errors.As(err, &ce) || ce.Restamped != "sub/b.txt" || !strings.Contains(err.Error(), "time, owner, extended attributes or links of sub/b.txt changed") {
		t.Fatalf("RestoreFrom on a workspace rewritten as it was: %v, want a ChangedError naming sub/b.txt", err)
	}
}

// changedCopy is a workspace, its checkpoint from, a copy of it restored elsewhere
// and changed by fn, and the copy's checkpoint to: what an effect preview makes.
func changedCopy(t *testing.T, files map[string]string, fn func(cp string)) (s *Store, ws, cp string, from, to Info) {
	ws, cp = t.TempDir(), filepath.Join(t.TempDir(), "copy")
	s = openStore(t, Options{})
	writeFiles(t, ws, files)
	from = mustCheckpoint(t, s, ws)
	if err := os.Mkdir(cp, 0o700); err != nil {
		t.Fatal(err)
	}
	mustRestore(t, s, cp, from.ID)
	fn(cp)
	return s, ws, cp, from, mustCheckpoint(t, s, cp)
}

// Approving applies the change the diff shows, path by path: a file the change does not
// name is not rewritten (same inode, same ctime), and what the diff cannot show (a time
// set on a file whose content did not change) is not applied either.
func TestRestoreFromWritesOnlyThePathsTheChangeNames(t *testing.T) {
	s, ws, _, from, to := changedCopy(t, map[string]string{"a.txt": "one\n", "sub/b.txt": "bee\n", "sub/c.txt": "sea\n"}, func(cp string) {
		writeFiles(t, cp, map[string]string{"sub/b.txt": "bee\nbuzz\n", "new.txt": "fresh\n"})
		os.Symlink("/etc", filepath.Join(cp, "sub", "out"))
		old := time.Unix(1e9, 0)
		os.Chtimes(filepath.Join(cp, "a.txt"), old, old)
		os.Link(filepath.Join(cp, "a.txt"), filepath.Join(cp, "alias")) // a.txt itself is not written
	})
	var before [2]syscall.Stat_t
	syscall.Lstat(filepath.Join(ws, "a.txt"), &before[0])
	syscall.Lstat(filepath.Join(ws, "sub/c.txt"), &before[1])
	r, err := s.RestoreFrom(ctx, ws, from.ID, to.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Diff.Summary(); got != "changed 4 files (+3 −0)" {
		t.Errorf("applied %s, want the 4 files the change names", got)
	}
	for i, name := range []string{"a.txt", "sub/c.txt"} {
		var now syscall.Stat_t
		syscall.Lstat(filepath.Join(ws, name), &now)
		// (a.txt's ctime moves: a name was linked to it)
		if now.Ino != before[i].Ino || now.Mtim != before[i].Mtim || name == "sub/c.txt" && now.Ctim != before[i].Ctim {
			t.Errorf("%s, which the change does not name, was written", name)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "sub/b.txt")); string(b) != "bee\nbuzz\n" {
		t.Errorf("sub/b.txt = %q", b)
	}
	if l, _ := os.Readlink(filepath.Join(ws, "sub/out")); l != "/etc" {
		t.Errorf("sub/out → %q", l)
	}
	var alias syscall.Stat_t
	if syscall.Lstat(filepath.Join(ws, "alias"), &alias); alias.Ino != before[0].Ino {
		t.Errorf("alias is not a hard link of a.txt (inode %d, a.txt's %d)", alias.Ino, before[0].Ino)
	}
}

// The stale check sees what a diff does not: a mode, an owner's or a time's change (a
// folder's too), a
// second name made outside the workspace (it moves the file's ctime), an extended
// attribute. Each makes the apply refused, the workspace left as it is.
func TestRestoreFromRefusesAWorkspaceRestampedSinceItsCheckpoint(t *testing.T) {
	outside := t.TempDir()
	for name, restamp := range map[string]func(ws string) error{
		"mtime": func(ws string) error {
			return os.Chtimes(filepath.Join(ws, "a.txt"), time.Unix(1e9, 0), time.Unix(1e9, 0))
		},
		"folder_mtime": func(ws string) error {
			return os.Chtimes(filepath.Join(ws, "d"), time.Unix(1e9, 0), time.Unix(1e9, 0))
		},
		"mode": func(ws string) error { return os.Chmod(filepath.Join(ws, "a.txt"), 0o600) },
		"hard_link": func(ws string) error {
			return os.Link(filepath.Join(ws, "a.txt"), filepath.Join(outside, "a-"+filepath.Base(ws)))
		},
		"xattr": func(ws string) error {
			return unix.Setxattr(filepath.Join(ws, "a.txt"), "user.agentd-test", []byte("v"), 0)
		},
	} {
		t.Run(name, func(t *testing.T) {
			s, ws, _, from, to := changedCopy(t, map[string]string{"a.txt": "one\n", "b.txt": "bee\n", "d/c.txt": "see\n"}, func(cp string) {
				writeFiles(t, cp, map[string]string{"b.txt": "changed\n"})
			})
			if err := restamp(ws); err != nil {
				t.Skipf("cannot %s here: %v", name, err)
			}
			want := listing(t, ws)
			_, err := s.RestoreFrom(ctx, ws, from.ID, to.ID)
			var ce *ChangedError
			if !errors.As(err, &ce) {
				t.Fatalf("RestoreFrom after a %s change: %v; want a ChangedError", name, err)
			}
			sameListing(t, "after a refused RestoreFrom", listing(t, ws), want)
		})
	}
}

// The names skip are neither checked nor changed: a helper's folder, changing while the
// parent's change is applied, is left as the helper has it.
func TestRestoreFromLeavesTheSkippedFoldersAlone(t *testing.T) {
	s, ws, _, from, to := changedCopy(t, map[string]string{"a.txt": "one\n", "agents/h/work.txt": "v1\n"}, func(cp string) {
		writeFiles(t, cp, map[string]string{"a.txt": "two\n", "agents/h/work.txt": "stale copy\n"})
	})
	writeFiles(t, ws, map[string]string{"agents/h/work.txt": "v2, the helper's\n", "agents/h2/new.txt": "new\n"})
	if _, err := s.RestoreFrom(ctx, ws, from.ID, to.ID, "agents"); err != nil {
		t.Fatalf("RestoreFrom with agents/ left out: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "agents/h/work.txt")); string(b) != "v2, the helper's\n" {
		t.Errorf("the helper's file reads %q: the parent's apply clobbered it", b)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "agents/h2/new.txt")); string(b) != "new\n" {
		t.Errorf("the helper's new file reads %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "a.txt")); string(b) != "two\n" {
		t.Errorf("a.txt = %q: the change was not applied", b)
	}
}

// A restore is the daemon's write into a workspace, so it waits while git runs in the
// tree it writes: a whole restore for a helper's git beneath it, and is refused, having
// changed nothing, when its time runs out first. One that leaves the helpers' folder out
// does not wait for a helper's git, but does for the workspace's own.
func TestRestoreWaitsWhileGitRunsInTheTreeItWrites(t *testing.T) {
	s, ws := storeWithFiles(t, map[string]string{"a.txt": "one\n", "agents/h/work.txt": "v1\n"})
	from := mustCheckpoint(t, s, ws)
	writeFiles(t, ws, map[string]string{"a.txt": "two\n"})
	to := mustCheckpoint(t, s, ws)
	refused := func(what string, restore func(ctx context.Context) error) {
		t.Helper()
		short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		defer cancel()
		if err := restore(short); err == nil || !strings.Contains(err.Error(), "git ran") {
			t.Errorf("%s while git ran: %v; want it refused for the git run", what, err)
		}
		if b, _ := os.ReadFile(filepath.Join(ws, "a.txt")); string(b) != "two\n" {
			t.Errorf("%s wrote a.txt (%q) while git ran", what, b)
		}
	}
	endHelper, err := commands.GitRun(ctx, filepath.Join(ws, "agents", "h"))
	if err != nil {
		t.Fatal(err)
	}
	refused("a whole restore", func(ctx context.Context) error { _, err := s.Restore(ctx, ws, from.ID); return err })
	endOwn, err := commands.GitRun(ctx, ws)
	if err != nil {
		t.Fatal(err)
	}
	refused("a put back without agents/", func(ctx context.Context) error {
		_, err := s.PutBack(ctx, ws, from.ID, to.ID, []string{"a.txt"}, "agents")
		return err
	})
	endOwn()
	if _, err := s.PutBack(ctx, ws, from.ID, to.ID, []string{"a.txt"}, "agents"); err != nil {
		t.Fatalf("a put back without agents/ during a helper's git run: %v", err)
	}
	endHelper()
	if b, _ := os.ReadFile(filepath.Join(ws, "a.txt")); string(b) != "one\n" {
		t.Errorf("a.txt after the put back: %q", b)
	}
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
	s, ws := storeWithFiles(t, map[string]string{"a.txt": "one\n"})
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

// The journal of an apply says which change it applies, so a crash mid-way finishes
// that change and nothing more; a journal written before it did (no change named) still
// reads as a whole restore.
func TestJournalKeepsTheChangeAnApplyIsMaking(t *testing.T) {
	j := &journal{ws: "/w", to: 7, before: 8, from: 5, skip: []string{"agents"}}
	s := openStore(t, Options{})
	if err := s.writeDurable(s.root, journalName, j.encode()); err != nil {
		t.Fatal(err)
	}
	got, err := s.readJournal()
	if err != nil || got.ws != "/w" || got.to != 7 || got.before != 8 || got.from != 5 || len(got.skip) != 1 || got.skip[0] != "agents" {
		t.Fatalf("journal read back as %+v, %v", got, err)
	}
	old := (&journal{ws: "/w", to: 7, before: 8}).encode()
	if err := s.writeDurable(s.root, journalName, old); err != nil {
		t.Fatal(err)
	}
	if got, err := s.readJournal(); err != nil || got.from != 0 || got.skip != nil {
		t.Fatalf("a restore's journal read back as %+v, %v", got, err)
	}
	unix.Unlinkat(s.root, journalName, 0)
}

// A put back restores only the paths named, as the before checkpoint holds them: a file
// created is removed, one changed or removed gets its content back, one replaced by a
// renamed folder is made again inside a folder holding only it; every other change of
// the step stays.
func TestPutBackRestoresOnlyTheNamedPaths(t *testing.T) {
	s, ws := storeWithFiles(t, map[string]string{"keep.txt": "old\n", "config/app.toml": "safe\n", "staging/x.toml": "mine\n", "locked/a.env": "A\n"})
	before := mustCheckpoint(t, s, ws)
	writeFiles(t, ws, map[string]string{"keep.txt": "new\n", "new.toml": "evil\n", "deep/er/b.toml": "evil\n"})
	if err := os.RemoveAll(filepath.Join(ws, "config")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(ws, "staging"), filepath.Join(ws, "config")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(ws, "locked", "a.env")); err != nil {
		t.Fatal(err)
	}
	after := mustCheckpoint(t, s, ws)
	r, err := s.PutBack(ctx, ws, before.ID, after.ID, []string{"new.toml", "deep/er/b.toml", "config/app.toml", "config/x.toml", "locked/a.env"})
	if err != nil {
		t.Fatal(err)
	}
	if r.Diff.Files == 0 {
		t.Fatalf("put back changed nothing: %+v", r.Diff)
	}
	want := map[string]string{"keep.txt": "new\n", "config/app.toml": "safe\n", "locked/a.env": "A\n"}
	for p, body := range want {
		if b, err := os.ReadFile(filepath.Join(ws, p)); err != nil || string(b) != body {
			t.Errorf("%s after put back: %q, %v; want %q", p, b, err, body)
		}
	}
	for _, p := range []string{"new.toml", "deep/er/b.toml", "config/x.toml", "staging"} {
		if _, err := os.Lstat(filepath.Join(ws, p)); !os.IsNotExist(err) {
			t.Errorf("%s after put back: %v, want it gone", p, err)
		}
	}
	verifyStore(t, s)
}
