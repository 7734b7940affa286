package commands

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

// A workspace named under /proc/PID/root is walked from that process's root, the one
// link followed, and no link past it: the same folder as its own path, while a link
// further on is refused as anywhere. Only /proc/PID/root names another namespace's view.
func TestAWorkspaceUnderAProcessRootIsWalkedFromThatRootAlone(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(dir, "ws")
	if err := errors.Join(os.Mkdir(ws, 0o700), os.Symlink(ws, filepath.Join(dir, "link"))); err != nil {
		t.Fatal(err)
	}
	root := "/proc/" + strconv.Itoa(os.Getpid()) + "/root"
	f, err := OpenWorkspaceDir(root + ws)
	if err != nil {
		t.Fatalf("the workspace through %s: %v", root, err)
	}
	defer f.Close()
	want, _ := os.Stat(ws)
	got, _ := f.Stat()
	if !os.SameFile(want, got) {
		t.Errorf("through %s the walk opened %v, want the workspace %v", root, got.Sys().(*syscall.Stat_t).Ino, want.Sys().(*syscall.Stat_t).Ino)
	}
	for _, p := range []string{root + filepath.Join(dir, "link"), "/proc/self/root" + ws, root + "x" + ws} {
		if f, err := OpenWorkspaceDir(p); err == nil {
			f.Close()
			t.Errorf("OpenWorkspaceDir(%q) opened it, want a link refused", p)
		}
	}
	for p, want := range map[string]string{root + ws: strconv.Itoa(os.Getpid()), "/proc/12/root": "12", "/proc/self/root/x": "",
		"/proc//root/x": "", "/proc/12/rootx": "", "/proc/12/cwd/x": "", "/x/proc/12/root": "", ws: ""} {
		if got := ViewNamespace(p); got != want {
			t.Errorf("ViewNamespace(%q) = %q, want %q", p, got, want)
		}
	}
}
