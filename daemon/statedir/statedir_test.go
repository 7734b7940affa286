package statedir

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
)

// TestSecureFixesAnOpenStateDir: a state dir left 0755 with a 0644 database, WAL and
// memory index becomes 0700/0600; workspace contents keep their modes; links are not
// followed.
func TestSecureFixesAnOpenStateDir(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	state := filepath.Join(t.TempDir(), "state")
	outside := filepath.Join(t.TempDir(), "elsewhere.txt")
	mk := func(path string, mode fs.FileMode) {
		t.Helper()
		if mode.IsDir() {
			if err := os.MkdirAll(path, 0o755); err != nil {
				t.Fatal(err)
			}
		} else if err := os.WriteFile(path, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, mode.Perm()); err != nil {
			t.Fatal(err)
		}
	}
	mk(state, fs.ModeDir|0o755)
	mk(filepath.Join(state, "agentd.db"), 0o644)
	mk(filepath.Join(state, "agentd.db-wal"), 0o644)
	mk(filepath.Join(state, "agentd.db-shm"), 0o666)
	mk(filepath.Join(state, "memory"), fs.ModeDir|0o755)
	mk(filepath.Join(state, "memory", "index.bin"), 0o644)
	mk(filepath.Join(state, "workspaces"), fs.ModeDir|0o755)
	mk(filepath.Join(state, "workspaces", "a-1"), fs.ModeDir|0o755)
	mk(filepath.Join(state, "workspaces", "a-1", "script.sh"), 0o755)
	mk(outside, 0o644)
	if err := os.Symlink(outside, filepath.Join(state, "link")); err != nil {
		t.Fatal(err)
	}

	open, err := Check(state, filepath.Join(state, "workspaces"), 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(open) != 7 {
		t.Errorf("Check found %d open paths, want 7: %v", len(open), open)
	}
	if err := Secure(state, filepath.Join(state, "workspaces")); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]fs.FileMode{
		"":                         0o700,
		"agentd.db":                0o600,
		"agentd.db-wal":            0o600,
		"agentd.db-shm":            0o600,
		"memory":                   0o700,
		"memory/index.bin":         0o600,
		"workspaces":               0o700,
		"workspaces/a-1":           0o755, // the agent's work: left alone
		"workspaces/a-1/script.sh": 0o755,
	} {
		fi, err := os.Stat(filepath.Join(state, path))
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != want {
			t.Errorf("%s: mode %04o, want %04o", path, got, want)
		}
	}
	if fi, _ := os.Stat(outside); fi.Mode().Perm() != 0o644 {
		t.Errorf("a link's target outside was changed to %04o", fi.Mode().Perm())
	}
	if open, err := Check(state, filepath.Join(state, "workspaces"), 0); err != nil || len(open) != 0 {
		t.Errorf("after Secure, Check = %v, %v", open, err)
	}
	// umask 077 from now on: what the daemon creates is private.
	if err := os.WriteFile(filepath.Join(state, "new"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(filepath.Join(state, "new")); fi.Mode().Perm() != 0o600 {
		t.Errorf("a file created after Secure has mode %04o", fi.Mode().Perm())
	}
}

func TestSecureCreatesAMissingDirAndFollowsALinkedRoot(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	real := filepath.Join(t.TempDir(), "real")
	os.Mkdir(real, 0o755)
	link := filepath.Join(t.TempDir(), "state")
	os.Symlink(real, link)
	if err := Secure(link, filepath.Join(link, "workspaces")); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(real); fi.Mode().Perm() != 0o700 {
		t.Errorf("the linked state dir has mode %04o", fi.Mode().Perm())
	}
	fresh := filepath.Join(t.TempDir(), "a", "b")
	if err := Secure(fresh, ""); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(fresh); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("a new state dir: %v, %v", fi, err)
	}
}

func TestCheckStopsAtMax(t *testing.T) {
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	for _, n := range []string{"a", "b", "c"} {
		os.WriteFile(filepath.Join(dir, n), nil, 0o644)
		os.Chmod(filepath.Join(dir, n), 0o644)
	}
	open, err := Check(dir, "", 2)
	if err != nil || !slices.Equal(open, []string{dir, filepath.Join(dir, "a")}) {
		t.Fatalf("Check = %v, %v", open, err)
	}
}
