package checkpoint

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/commands/permission"
	"github.com/agentd/agentd/internal/testutil"
)

// denyRules are the write-deny rules of patterns, as an agent's policy makes them.
func denyRules(t *testing.T, patterns ...string) *permission.DeniedPaths {
	t.Helper()
	r, err := permission.ParseRules("agent", nil, patterns)
	if err != nil {
		t.Fatal(err)
	}
	return permission.Denied(r)
}

// stepDenied checkpoints ws (partial checkpoints too), runs step on it, checkpoints it again and returns the
// change's denied writes under rules, with the checkpoints before and after.
func stepDenied(t *testing.T, s *Store, ws string, rules *permission.DeniedPaths, step func()) (denied []DeniedWrite, before, after Info) {
	t.Helper()
	before, err := s.Checkpoint(context.Background(), ws)
	if err != nil {
		t.Fatal(err)
	}
	step()
	if after, err = s.Checkpoint(context.Background(), ws); err != nil {
		t.Fatal(err)
	}
	d, err := s.Diff(context.Background(), before.ID, after.ID)
	if err != nil {
		t.Fatal(err)
	}
	denied, _, err = d.Denied(context.Background(), ws, rules)
	if err != nil {
		t.Fatal(err)
	}
	return denied, before, after
}

// pathsOf are the paths of ws.
func pathsOf(ws []DeniedWrite) []string {
	var out []string
	for _, w := range ws {
		out = append(out, w.Path)
	}
	return out
}

// A step that makes a folder its end's checkpoint cannot capture (past MaxEntries here)
// and writes a denied file in it has the folder taken as denied, as nothing tells what
// it holds: it was not there before, so a put back removes it, and the step's other
// change stays.
func TestDeniedWriteInAFolderTheEndCouldNotCaptureIsPutBack(t *testing.T) {
	ws := t.TempDir()
	s := openStore(t, Options{MaxEntries: 4})
	writeFiles(t, ws, map[string]string{"a/1": "1", "a/2": "2"})
	denied, before, after := stepDenied(t, s, ws, denyRules(t, "write_file(*.toml)"), func() {
		writeFiles(t, ws, map[string]string{"a/3": "3", "d/agentd.toml": "[shell]\nnetwork = true\n"})
	})
	if len(denied) != 1 || denied[0].Path != "d" || !denied[0].Unseen || denied[0].Unknown {
		t.Fatalf("denied = %+v, want d alone, unseen, its before known (absent)", denied)
	}
	if msg := denied[0].String(); !strings.Contains(msg, "could not capture it (is past the 4 files") || !strings.Contains(msg, "write_file(*.toml)") {
		t.Errorf("the denied write says %q: not what was not captured nor which rules it may break", msg)
	}
	if _, err := s.PutBack(context.Background(), ws, before.ID, after.ID, pathsOf(denied)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(ws, "d")); !os.IsNotExist(err) {
		t.Errorf("d after the put back: %v, want it gone", err)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "a/3")); err != nil || string(b) != "3" {
		t.Errorf("a/3, which no rule denies, was not kept: %q, %v", b, err)
	}
}

// A folder the step's start captured and its end could not (it grew past MaxEntries) is
// put back whole as the start held it: what was written in it cannot be told apart.
func TestFolderTheEndCouldNotCaptureIsPutBackAsTheStartHeldIt(t *testing.T) {
	ws := t.TempDir()
	s := openStore(t, Options{MaxEntries: 5})
	writeFiles(t, ws, map[string]string{"lib/helper.py": "safe\n", "z/1": "1"})
	denied, before, after := stepDenied(t, s, ws, denyRules(t, "write_file(lib/*.toml)"), func() {
		writeFiles(t, ws, map[string]string{"a/1": "1", "a/2": "2", "a/3": "3", "a/4": "4", "lib/app.toml": "evil\n", "lib/helper.py": "evil\n"})
	})
	if got := pathsOf(denied); !slices.Equal(got, []string{"lib"}) || denied[0].Unknown {
		t.Fatalf("denied = %+v, want lib, unseen, known before", denied)
	}
	if _, err := s.PutBack(context.Background(), ws, before.ID, after.ID, pathsOf(denied)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(ws, "lib/app.toml")); !os.IsNotExist(err) {
		t.Errorf("lib/app.toml after the put back: %v, want it gone", err)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "lib/helper.py")); string(b) != "safe\n" {
		t.Errorf("lib/helper.py after the put back: %q, want it as the start held it", b)
	}
}

// A folder at a rule's root that neither the start nor the end captured hides what was
// written in it, and what to put back: it is listed as unseen and unknown, which the
// wall cannot undo and must say. A folder away from every rule's root is not listed.
func TestFolderNoCheckpointCapturedIsDeniedAndUnknown(t *testing.T) {
	ws := t.TempDir()
	s := openStore(t, Options{MaxEntries: 3})
	writeFiles(t, ws, map[string]string{"a/1": "1", "a/2": "2", "config/app.toml": "safe\n", "notes/n": "n"})
	denied, _, _ := stepDenied(t, s, ws, denyRules(t, "write_file(config/*.toml)"), func() {
		writeFiles(t, ws, map[string]string{"config/app.toml": "evil\n", "notes/m": "m"})
	})
	if len(denied) != 1 || denied[0].Path != "config" || !denied[0].Unseen || !denied[0].Unknown {
		t.Fatalf("denied = %+v, want config alone, unseen and unknown", denied)
	}
}

// A denied file the start did not capture (over MaxFileBytes) that the step rewrote
// cannot be put back: it is listed as unknown, so the wall does not claim it.
func TestDeniedFileTheStartDidNotCaptureIsUnknown(t *testing.T) {
	ws := t.TempDir()
	s := openStore(t, Options{MaxFileBytes: 4})
	writeFiles(t, ws, map[string]string{"app.toml": "the person's own\n", "small.toml": "ok"})
	denied, _, _ := stepDenied(t, s, ws, denyRules(t, "write_file(*.toml)"), func() {
		writeFiles(t, ws, map[string]string{"app.toml": "evil, and long enough\n", "small.toml": "ev"})
	})
	if len(denied) != 2 || denied[0].Path != "app.toml" || !denied[0].Unknown || denied[1].Path != "small.toml" || denied[1].Unknown {
		t.Fatalf("denied = %+v, want app.toml unknown and small.toml known", denied)
	}
}

// dropEnv names, for the run as an unprivileged user, a folder root made for it holding
// locked, a folder of root's it may write and search but not list.
const dropEnv = "AGENTD_TEST_FOREIGN_FOLDER"

// A folder the daemon's user cannot list (not its own: it cannot lend itself access)
// brought into the workspace with a denied file in it is taken as denied, as nothing
// tells what it holds: the second wall does not pass it over.
func TestDeniedWriteInAFolderTheDaemonCannotListIsTakenAsDenied(t *testing.T) {
	if os.Geteuid() == 0 && os.Getenv(dropEnv) == "" {
		drop := t.TempDir()
		for _, d := range []string{filepath.Dir(drop), drop} {
			if err := os.Chmod(d, 0o777); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Mkdir(filepath.Join(drop, "locked"), 0o333); err != nil {
			t.Fatal(err)
		}
		os.Chmod(filepath.Join(drop, "locked"), 0o333)
		t.Setenv(dropEnv, drop)
	}
	if testutil.AsUnprivileged(t) {
		return
	}
	drop := os.Getenv(dropEnv)
	if drop == "" {
		t.Skip("making a folder the daemon's user does not own needs root")
	}
	ws := lockableTempDir(t)
	s := openStore(t, Options{})
	writeFiles(t, ws, map[string]string{"a/1": "1"})
	lib := filepath.Join(ws, "lib")
	denied, _, after := stepDenied(t, s, ws, denyRules(t, "write_file(*.toml)"), func() {
		if err := os.Rename(filepath.Join(drop, "locked"), lib); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Rename(lib, filepath.Join(drop, "locked")) }) // before the workspace goes: it cannot remove it
		writeFiles(t, ws, map[string]string{"lib/agentd.toml": "[shell]\nnetwork = true\n"})
	})
	if len(denied) != 1 || denied[0].Path != "lib" || !denied[0].Unseen || denied[0].Unknown {
		t.Fatalf("denied = %+v (checkpoint: %s), want lib alone, unseen, its before known (absent)", denied, after.Problem())
	}
	if !strings.Contains(denied[0].String(), "cannot be opened: permission denied") {
		t.Errorf("the denied write says %q, not why the folder was not captured", denied[0])
	}
}

// The names skipped in the top folder (a parent's wall skips the helpers' folder, which
// the helpers own) are left out: a file moved from there onto a denied path is denied
// where it landed, but not put back where it came from.
func TestDeniedLeavesOutTheNamesSkipped(t *testing.T) {
	ws := t.TempDir()
	s := openStore(t, Options{})
	writeFiles(t, ws, map[string]string{"agents/h/x.toml": "helper's\n", "keep": "k"})
	before := mustCheckpoint(t, s, ws)
	if err := os.Rename(filepath.Join(ws, "agents/h/x.toml"), filepath.Join(ws, "app.toml")); err != nil {
		t.Fatal(err)
	}
	after := mustCheckpoint(t, s, ws)
	d, err := s.Diff(ctx, before.ID, after.ID)
	if err != nil {
		t.Fatal(err)
	}
	denied, moved, err := d.Denied(ctx, ws, denyRules(t, "write_file(*.toml)"), commands.HelpersFolder)
	if err != nil {
		t.Fatal(err)
	}
	if got := pathsOf(denied); !slices.Equal(got, []string{"app.toml"}) || len(moved) > 0 {
		t.Errorf("denied %q, moved %q; want app.toml denied and nothing in agents/ to put back", got, moved)
	}
}
