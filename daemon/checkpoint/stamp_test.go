package checkpoint

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentd/agentd/commands"
)

// stampedCheckpoint checkpoints ws, walking it, until every folder the checkpoint does
// not capture has a stamp (none of it changed within the racy window), and returns it.
func stampedCheckpoint(t *testing.T, s *Store, ws string) Info {
	t.Helper()
	return walkedUntil(t, s, ws, "a checkpoint whose uncaptured folders all have a stamp", func(c Info) bool {
		tr, err := s.readTree(c.root)
		if err != nil {
			t.Fatal(err)
		}
		return !treeHas(t, s, tr, func(e *entry) bool {
			return e.kind == kindDir && e.flags&(flagUncaptured|flagTreeStamp) == flagUncaptured
		})
	})
}

// stampedDenied is stepDenied with both ends' uncaptured folders stamped, step changing
// something.
func stampedDenied(t *testing.T, s *Store, ws string, rules commands.PathRules, step func()) []DeniedWrite {
	t.Helper()
	before := stampedCheckpoint(t, s, ws)
	step()
	// The stamp's walk watches every folder it lists: the fast path sees the change.
	if c, err := s.Checkpoint(context.Background(), ws); err != nil || c.ID == before.ID {
		t.Errorf("the checkpoint after the step is %d (%v), the one before it: the watch missed the change", c.ID, err)
	}
	after := stampedCheckpoint(t, s, ws)
	d, err := s.Diff(context.Background(), before.ID, after.ID)
	if err != nil {
		t.Fatal(err)
	}
	denied, _, err := d.Denied(context.Background(), ws, rules)
	if err != nil {
		t.Fatal(err)
	}
	return denied
}

// A folder no checkpoint captures (past MaxEntries) that no step touches keeps the same
// stamp at both ends of every step, so it is neither denied nor unknown: an innocent
// step under a wildcard deny rule does not pause its agent for it, step after step.
func TestAnUncapturedFolderNothingChangedIsNotDenied(t *testing.T) {
	ws := t.TempDir()
	s := openStore(t, Options{MaxEntries: 1000})
	writeFiles(t, ws, map[string]string{"notes.txt": "step 0"})
	for i := range 1200 {
		if err := os.MkdirAll(filepath.Join(ws, "zbulk", fmt.Sprintf("d%04d", i)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for step := 1; step <= 3; step++ {
		denied := stampedDenied(t, s, ws, denyRules(t, "write_file(*.toml)"), func() {
			writeFiles(t, ws, map[string]string{"notes.txt": fmt.Sprint("step ", step)})
		})
		if len(denied) > 0 {
			t.Errorf("step %d wrote only notes.txt, yet the second wall denies %d paths, first %s", step, len(denied), denied[0])
		}
	}
}

// A folder no checkpoint captures whose stamp moved fails closed as before, wherever in
// it the change was: its own times move only for a name made or removed in it, so the
// stamp takes those of everything it holds, and a file rewritten in place (same size)
// or a mode changed two folders down moves it too.
func TestAChangeDeepInsideAnUncapturedFolderIsDeniedAndUnknown(t *testing.T) {
	changes := map[string]func(ws string) error{
		"file_rewritten_in_place_deep_down": func(ws string) error {
			return os.WriteFile(filepath.Join(ws, "z/deep/inner/app.toml"), []byte("evil\n"), 0o644)
		},
		"mode_changed_deep_down": func(ws string) error {
			return os.Chmod(filepath.Join(ws, "z/deep/inner/app.toml"), 0o600)
		},
		"file_made_deep_down": func(ws string) error {
			return os.WriteFile(filepath.Join(ws, "z/deep/inner/new.toml"), []byte("new\n"), 0o644)
		},
		"name_made_in_it": func(ws string) error {
			return os.WriteFile(filepath.Join(ws, "z/top.toml"), []byte("new\n"), 0o644)
		},
	}
	for name, change := range changes {
		t.Run(name, func(t *testing.T) {
			ws := t.TempDir()
			s := openStore(t, Options{MaxEntries: 10})
			files := map[string]string{"z/deep/inner/app.toml": "safe\n"}
			for i := range 10 {
				files[fmt.Sprint("f", i)] = "f"
			}
			writeFiles(t, ws, files)
			denied := stampedDenied(t, s, ws, denyRules(t, "write_file(*.toml)"), func() {
				if err := change(ws); err != nil {
					t.Fatal(err)
				}
			})
			if len(denied) != 1 || denied[0].Path != "z" || !denied[0].Unseen || !denied[0].Unknown {
				t.Fatalf("denied = %+v, want z alone, unseen and unknown", denied)
			}
		})
	}
}

// BenchmarkWalkWithAnUncapturedFolder times a full walk (no inotify fast path) of a
// workspace of 1,000 captured files beside a folder of 1,000 more past MaxEntries,
// which the walk stamps; the same walk with MaxEntries high enough captures it all.
func BenchmarkWalkWithAnUncapturedFolder(b *testing.B) {
	for _, c := range []struct {
		name string
		max  int
	}{{"stamped", 1001}, {"captured", 0}} {
		b.Run(c.name, func(b *testing.B) {
			ws := b.TempDir()
			files := map[string]string{}
			for i := range 1000 {
				files[fmt.Sprintf("a/f%04d", i)] = "x"
				files[fmt.Sprintf("z/f%04d", i)] = "x"
			}
			writeFiles(b, ws, files)
			s := openStore(b, Options{MaxEntries: c.max})
			for b.Loop() {
				s.mu.Lock()
				s.watch.armed = false
				s.mu.Unlock()
				if _, err := s.Checkpoint(context.Background(), ws); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
