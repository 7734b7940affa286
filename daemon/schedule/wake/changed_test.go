package wake

import (
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/agentd/agentd/commands/permission"
)

// TestChangedWakesOnlyOnChange: the first firing looks and wakes; then a firing wakes
// exactly when a watched path's content changed since the last run that started, and its
// observation names each path created, deleted or modified, with the line diff.
func TestChangedWakesOnlyOnChange(t *testing.T) {
	r, id, ws := watching(t, "s-notes", map[string]string{"notes/a.txt": "one\ntwo\n", "notes/old.txt": "old\n", "elsewhere.txt": "x\n"})
	c := Conditions{Changed: []string{"notes"}}
	tg := Target{Workspace: ws}

	if v := r.fire(id, c, tg); v.Outcome != Wake || !strings.Contains(v.Observation, "first look") {
		t.Fatalf("first firing: %+v", v)
	}
	if v := r.fire(id, c, tg); v.Outcome != NothingToDo || v.Wake || !strings.Contains(v.Reason, "nothing changed in notes") {
		t.Fatalf("nothing changed: %+v", v)
	}
	write(t, filepath.Join(ws, "elsewhere.txt"), "y\n") // outside the watched folder
	if v := r.fire(id, c, tg); v.Outcome != NothingToDo {
		t.Fatalf("a change outside the watched folder: %+v", v)
	}

	write(t, filepath.Join(ws, "notes", "a.txt"), "one\nTWO\n")
	write(t, filepath.Join(ws, "notes", "sub", "new.txt"), "new\n")
	os.Remove(filepath.Join(ws, "notes", "old.txt"))
	v := r.fire(id, c, tg)
	if v.Outcome != Wake || !v.Wake {
		t.Fatalf("after changes: %+v", v)
	}
	for _, want := range []string{"modified file notes/a.txt (+1 −1)", "created file notes/sub/new.txt", "deleted file notes/old.txt",
		"created folder notes/sub", "-two", "+TWO", "--- a/notes/a.txt"} {
		if !strings.Contains(v.Observation, want) {
			t.Errorf("observation lacks %q:\n%s", want, v.Observation)
		}
	}
	if !strings.Contains(v.Reason, "notes: changed 3 files") {
		t.Errorf("reason: %q", v.Reason)
	}
	if v := r.fire(id, c, tg); v.Outcome != NothingToDo {
		t.Fatalf("after the run that saw the changes: %+v", v)
	}
}

// TestChangedKeepsChangeUntilRunStarts: a firing whose run never started does not swallow
// the change: the next firing sees it again, until a run starts from it.
func TestChangedKeepsChangeUntilRunStarts(t *testing.T) {
	r, id, ws := watching(t, "s-keep", map[string]string{"todo.txt": "a\n"})
	c := Conditions{Changed: []string{"todo.txt"}}
	tg := Target{Workspace: ws}
	r.fire(id, c, tg)
	seen := r.state(id).Seen

	write(t, filepath.Join(ws, "todo.txt"), "a\nb\n")
	for i := range 3 { // checked, but the run does not start (skipped, failed to start, the daemon died)
		v := r.e.Check(t.Context(), id, c, tg)
		if v.Outcome != Wake || !strings.Contains(v.Observation, "modified file todo.txt (+1 −0)") {
			t.Fatalf("firing %d without a run: %+v", i, v)
		}
		if got := r.state(id).Seen; got != seen {
			t.Fatalf("a check without a run wrote the state: %s, was %s", got, seen)
		}
	}
	if v := r.fire(id, c, tg); v.Outcome != Wake {
		t.Fatalf("the firing whose run starts: %+v", v)
	}
	if v := r.fire(id, c, tg); v.Outcome != NothingToDo {
		t.Fatalf("after the run started: %+v", v)
	}
}

// TestChangedFileAmongOthers: a watched file wakes on its own changes only, not on its
// folder's others, and a file that is removed or appears is a change.
func TestChangedFileAmongOthers(t *testing.T) {
	r, id, ws := watching(t, "s-file", map[string]string{"inbox/todo.txt": "a\n", "inbox/other.txt": "x\n"})
	c := Conditions{Changed: []string{"inbox/todo.txt", "inbox/later.txt"}}
	tg := Target{Workspace: ws}
	r.fire(id, c, tg)
	write(t, filepath.Join(ws, "inbox", "other.txt"), "y\n")
	if v := r.fire(id, c, tg); v.Outcome != NothingToDo {
		t.Fatalf("a sibling changed: %+v", v)
	}
	os.Remove(filepath.Join(ws, "inbox", "todo.txt"))
	write(t, filepath.Join(ws, "inbox", "later.txt"), "new\n")
	v := r.fire(id, c, tg)
	if v.Outcome != Wake || !strings.Contains(v.Observation, "deleted file inbox/todo.txt") || !strings.Contains(v.Observation, "created file inbox/later.txt") ||
		strings.Contains(v.Observation, "other.txt") {
		t.Fatalf("the watched files changed: %+v", v)
	}
}

// TestChangedRefusesPathsOutside: a path that leaves the workspace through "..", an
// absolute path under no read-only path, and a symlink leading out (planted before or
// swapped in after the schedule was made) are refused by the file commands' resolver,
// as a failed check that names the path; nothing outside is read.
func TestChangedRefusesPathsOutside(t *testing.T) {
	outside := workspace(t)
	write(t, filepath.Join(outside, "secret.txt"), "KEY=hunter2\n")
	for _, p := range []string{"../x", "notes/../../x", "~/notes"} {
		if _, err := Parse(Flags{Changed: []string{p}}); err == nil {
			t.Errorf("Parse(--when-changed %q) passed", p)
		}
	}

	r := newRig(t, false)
	ws := workspace(t)
	write(t, filepath.Join(ws, "notes", "a.txt"), "a\n")
	os.Symlink(outside, filepath.Join(ws, "link"))
	tests := []struct {
		name string
		path string
		want string
	}{
		{"symlink_out", "link", "symlink"},
		{"through_symlink_out", "link/secret.txt", "symlink"},
		{"absolute_not_read_only", outside, "read-only paths"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := r.schedule("s-out" + string(rune('a'+i)))
			c := Conditions{Changed: []string{tt.path}}
			if err := r.e.Validate(c, Target{Workspace: ws}); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Validate: %v; want an error naming %q", err, tt.want)
			}
			v := r.fire(id, c, Target{Workspace: ws})
			if v.Outcome != CheckFailed || v.Wake || !strings.Contains(v.Reason, tt.want) || strings.Contains(v.Reason+v.Observation, "hunter2") {
				t.Errorf("got %+v; want check_failed naming %q", v, tt.want)
			}
		})
	}

	// The folder was inside when the schedule was made; a symlink swapped in for it later.
	id := r.schedule("s-swap")
	c := Conditions{Changed: []string{"notes"}}
	if v := r.fire(id, c, Target{Workspace: ws}); v.Outcome != Wake {
		t.Fatalf("first look: %+v", v)
	}
	os.RemoveAll(filepath.Join(ws, "notes"))
	os.Symlink(outside, filepath.Join(ws, "notes"))
	if v := r.fire(id, c, Target{Workspace: ws}); v.Outcome != CheckFailed || !strings.Contains(v.Reason, "symlink") ||
		strings.Contains(v.Reason+v.Observation, "hunter2") || strings.Contains(v.Observation, "secret.txt") {
		t.Fatalf("swapped symlink: %+v", v)
	}
}

// TestChangedReadOnlyPath: an absolute path under one of the agent's read-only paths is
// watched like a workspace path; a schedule with no workspace (a fresh agent per run) can
// watch only such paths.
func TestChangedReadOnlyPath(t *testing.T) {
	r := newRig(t, false)
	id := r.schedule("s-ro")
	ro := workspace(t)
	inbox := filepath.Join(ro, "inbox")
	write(t, filepath.Join(inbox, "1.eml"), "hello\n")
	c := Conditions{Changed: []string{inbox}}
	tg := Target{ReadOnly: []string{ro}}
	if err := r.e.Validate(c, tg); err != nil {
		t.Fatal(err)
	}
	r.fire(id, c, tg)
	write(t, filepath.Join(inbox, "2.eml"), "more\n")
	if v := r.fire(id, c, tg); v.Outcome != Wake || !strings.Contains(v.Observation, "created file "+inbox+"/2.eml") {
		t.Fatalf("new mail: %+v", v)
	}
	rel := Conditions{Changed: []string{"notes"}}
	if err := r.e.Validate(rel, tg); err == nil || !strings.Contains(err.Error(), "fresh agent") {
		t.Errorf("relative path without a workspace: %v", err)
	}
	if err := r.e.Validate(Conditions{Changed: []string{filepath.Join(ro, "nope")}}, tg); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("missing path: %v", err)
	}
}

// TestChangedHostileEntries: a fifo is never opened (no hang), a 2 GB sparse file is not
// read past the store's bound but still watched by its size and times, and neither is
// reported as a change while it stays as it is.
func TestChangedHostileEntries(t *testing.T) {
	r, id, ws := watching(t, "s-hostile", map[string]string{"box/a.txt": "a\n"})
	if err := syscall.Mkfifo(filepath.Join(ws, "box", "pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(ws, "box", "sparse.img")
	if err := os.WriteFile(big, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, 2<<30); err != nil {
		t.Fatal(err)
	}
	c := Conditions{Changed: []string{"box"}}
	tg := Target{Workspace: ws}
	if v := r.fire(id, c, tg); v.Outcome != Wake {
		t.Fatalf("first look: %+v", v)
	}
	if v := r.fire(id, c, tg); v.Outcome != NothingToDo {
		t.Fatalf("unchanged: %+v", v)
	}
	if err := os.Truncate(big, 3<<30); err != nil {
		t.Fatal(err)
	}
	if v := r.fire(id, c, tg); v.Outcome != Wake || !strings.Contains(v.Observation, "modified file box/sparse.img") {
		t.Fatalf("the sparse file grew: %+v", v)
	}
}

// TestForget: a removed schedule's checkpoint stores go; a store made anew (its
// checkpoints numbered from 1 again) is not mistaken for what the last run saw.
func TestForget(t *testing.T) {
	r, id, ws := watching(t, "s-forget", map[string]string{"notes/a": "a\n"})
	c := Conditions{Changed: []string{"notes"}}
	r.fire(id, c, Target{Workspace: ws})
	if err := r.e.Forget(id); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(r.dir, id)); !os.IsNotExist(err) {
		t.Fatalf("the schedule's checkpoints are still there: %v", err)
	}
	v := r.fire(id, c, Target{Workspace: ws}) // its row is still there: the store is new
	if v.Outcome != Wake || !strings.Contains(v.Reason, "no longer kept") {
		t.Fatalf("after Forget: %+v", v)
	}
	if err := r.e.Forget("../etc"); err == nil {
		t.Fatal("Forget took a path for a schedule id")
	}
}

// A watched absolute path may neither be nor hold what the agent's sandbox hides in its
// read-only paths (agentd's config, tokens): a diff of it would show what programs cannot read.
func TestWatchedPathHoldingAHiddenPathIsRefused(t *testing.T) {
	ro := t.TempDir()
	for _, d := range []string{"tokens", "notes"} {
		if err := os.MkdirAll(filepath.Join(ro, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	tg := Target{ReadOnly: []string{ro}, Hidden: []string{filepath.Join(ro, "tokens")}}
	for _, p := range []string{ro, filepath.Join(ro, "tokens"), filepath.Join(ro, "tokens", "slack")} {
		if _, err := locate(p, tg); err == nil || !strings.Contains(err.Error(), "hides") {
			t.Errorf("locate(%s) = %v, want refused for the hidden tokens", p, err)
		}
	}
	if _, err := locate(filepath.Join(ro, "notes"), tg); err != nil {
		t.Errorf("locate(notes) = %v, want it watched", err)
	}
}

// A watched folder's changes to a path the agent's deny rules keep from its programs are
// named, so the model knows something changed, but their content is not shown; a denied
// path itself cannot be watched.
func TestWatchedFolderNamesDeniedChangesWithoutContent(t *testing.T) {
	c := Conditions{Changed: []string{"notes"}}
	r, ws, tg, id := firstLook(t, "read_file(notes/secret*)", c, "notes/a.txt", "notes/secret.txt")
	write(t, filepath.Join(ws, "notes", "a.txt"), "two\n")
	write(t, filepath.Join(ws, "notes", "secret.txt"), "hunter3\n")
	v := r.fire(id, c, tg)
	if v.Outcome != Wake {
		t.Fatalf("after changes: %+v", v)
	}
	for _, want := range []string{"modified file notes/secret.txt", "modified file notes/a.txt", "+two"} {
		if !strings.Contains(v.Observation, want) {
			t.Errorf("observation lacks %q:\n%s", want, v.Observation)
		}
	}
	if strings.Contains(v.Observation, "hunter") {
		t.Errorf("observation shows a denied file's content:\n%s", v.Observation)
	}
	if v := r.fire(r.schedule("s-denied-file"), Conditions{Changed: []string{"notes/secret.txt"}}, tg); v.Outcome != CheckFailed ||
		!strings.Contains(v.Reason, "secret") {
		t.Errorf("watching a denied file: %+v", v)
	}
}

// A watched folder swapped for a link to a folder holding denied paths is not the folder
// the last run saw, and the changes under it are tested against the deny rules where they
// are: their content never reaches the model.
func TestWatchedLinkShowsNothingOfTheDeniedPathsItLeadsTo(t *testing.T) {
	c := Conditions{Changed: []string{"notes"}}
	r, ws, tg, id := firstLook(t, "read_file(secrets/*)", c, "notes/a.txt", "secrets/key.txt")
	// the agent (a shell step) did: rm -r notes; ln -s . notes
	if err := os.RemoveAll(filepath.Join(ws, "notes")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(".", filepath.Join(ws, "notes")); err != nil {
		t.Fatal(err)
	}
	if v := r.fire(id, c, tg); !strings.Contains(v.Observation+v.Reason, "not the folder the last run saw") {
		t.Errorf("a watched folder swapped for a link counts as the same folder: %+v", v)
	}
	write(t, filepath.Join(ws, "secrets", "key.txt"), "hunter3\n") // the operator rotates the key
	v := r.fire(id, c, tg)
	if v.Outcome != Wake || !strings.Contains(v.Observation, "notes/secrets/key.txt") {
		t.Errorf("the change to the denied file is not named: %+v", v)
	}
	if strings.Contains(v.Observation, "hunter") {
		t.Errorf("a denied file's content reached the model's first observation:\n%s", v.Observation)
	}
}

// firstLook is a rig, a workspace holding files (secret*, key* hold "hunter2", the others
// "one"), a target denying what rule does, and a schedule on c whose first firing woke.
func firstLook(t *testing.T, rule string, c Conditions, files ...string) (*rig, string, Target, string) {
	rules, err := permission.ParseRules("agent", nil, []string{rule})
	if err != nil {
		t.Fatal(err)
	}
	contents := map[string]string{}
	for _, f := range files {
		contents[f] = "one\n"
		if b := path.Base(f); strings.HasPrefix(b, "secret") || strings.HasPrefix(b, "key") {
			contents[f] = "hunter2\n"
		}
	}
	r, id, ws := watching(t, "s-first-look", contents)
	tg := Target{Workspace: ws, Denied: permission.Denied(rules)}
	if v := r.fire(id, c, tg); v.Outcome != Wake {
		t.Fatalf("first firing: %+v", v)
	}
	return r, ws, tg, id
}
