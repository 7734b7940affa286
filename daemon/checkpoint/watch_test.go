package checkpoint

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/commands/shell"
)

// walked takes a checkpoint of ws and reports it and whether it walked the workspace.
func walked(t *testing.T, s *Store, ws string) (Info, bool) {
	t.Helper()
	before := s.walks
	c, err := s.Checkpoint(context.Background(), ws)
	if err != nil {
		t.Fatal(err)
	}
	return c, s.walks > before
}

// A checkpoint with no event since the last one returns it without a walk; every kind
// of change queues an event, so the next checkpoint walks and sees it.
func TestCheckpointSkipsTheWalkOnlyWhenNothingHappened(t *testing.T) {
	for _, c := range []struct {
		name   string
		change func(ws string) error
	}{
		{"write", func(ws string) error { return os.WriteFile(filepath.Join(ws, "sub", "a.txt"), []byte("A"), 0o644) }},
		{"append_same_size_and_time", func(ws string) error {
			p := filepath.Join(ws, "sub", "a.txt")
			st, _ := os.Stat(p)
			if err := os.WriteFile(p, []byte("b"), 0o644); err != nil {
				return err
			}
			return os.Chtimes(p, st.ModTime(), st.ModTime())
		}},
		{"chmod", func(ws string) error { return os.Chmod(filepath.Join(ws, "sub", "a.txt"), 0o600) }},
		{"create_deep", func(ws string) error { return os.WriteFile(filepath.Join(ws, "sub", "deeper", "new"), nil, 0o644) }},
		{"remove", func(ws string) error { return os.Remove(filepath.Join(ws, "top.txt")) }},
		{"rename", func(ws string) error {
			return os.Rename(filepath.Join(ws, "top.txt"), filepath.Join(ws, "sub", "deeper", "moved.txt"))
		}},
		{"mkdir", func(ws string) error { return os.Mkdir(filepath.Join(ws, "sub", "deeper", "d"), 0o755) }},
		{"symlink", func(ws string) error { return os.Symlink("/etc/passwd", filepath.Join(ws, "link")) }},
		{"mmap_write", func(ws string) error {
			f, err := os.OpenFile(filepath.Join(ws, "sub", "a.txt"), os.O_RDWR, 0)
			if err != nil {
				return err
			}
			m, err := syscall.Mmap(int(f.Fd()), 0, 1, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
			f.Close() // the writes below come after the close: its event is what tells
			if err != nil {
				return err
			}
			m[0] = 'z'
			return syscall.Munmap(m)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ws := t.TempDir()
			os.MkdirAll(filepath.Join(ws, "sub", "deeper"), 0o755)
			os.WriteFile(filepath.Join(ws, "sub", "a.txt"), []byte("a"), 0o644)
			os.WriteFile(filepath.Join(ws, "top.txt"), []byte("top"), 0o644)
			s := openStore(t, Options{})
			first := settled(t, s, ws)
			if again, w := walked(t, s, ws); w || again.ID != first.ID {
				t.Fatalf("nothing changed, yet the checkpoint walked (%v) or is new (%d, was %d)", w, again.ID, first.ID)
			}
			if err := c.change(ws); err != nil {
				t.Fatal(err)
			}
			after, w := walked(t, s, ws)
			if !w || after.ID == first.ID {
				t.Fatalf("after %s the checkpoint walked %v and is %d (was %d): the change was missed", c.name, w, after.ID, first.ID)
			}
		})
	}
}

// A file with a second name may be changed through a folder no watch covers: its
// workspace is walked every time.
func TestHardLinkedFileMakesEveryCheckpointWalk(t *testing.T) {
	ws, outside := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(outside, "f"), []byte("x"), 0o644)
	if err := os.Link(filepath.Join(outside, "f"), filepath.Join(ws, "f")); err != nil {
		t.Skip("no hard links here:", err)
	}
	s := openStore(t, Options{})
	walked(t, s, ws)
	if _, w := walked(t, s, ws); !w {
		t.Fatal("a workspace with a hard-linked file skipped the walk")
	}
}

// A change a sandboxed program makes through the sandbox's bind mount of the workspace
// is seen by the next checkpoint; and the sandbox sees nothing of the state dir beside
// the workspace, where the checkpoints are kept.
func TestSandboxWriteThroughBindMountIsSeenAndStateDirIsHidden(t *testing.T) {
	bwrap, err := exec.LookPath("bwrap")
	if err == nil {
		_, err = shell.CheckSandbox(shell.Options{Sandbox: shell.SandboxBwrap, Bwrap: bwrap})
	}
	if err != nil {
		t.Skip("no bwrap sandbox here:", err)
	}
	state, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(state, "workspaces", "a-1")
	os.MkdirAll(ws, 0o777)
	os.Chmod(ws, 0o777) // the sandbox's unprivileged uid writes here
	os.WriteFile(filepath.Join(ws, "kept.txt"), []byte("before\n"), 0o666)
	os.Chmod(filepath.Join(ws, "kept.txt"), 0o666)
	s := mustOpen(t, filepath.Join(state, "checkpoints", "a-1"), Options{})
	defer s.Close()
	first := settled(t, s, ws)
	c, err := shell.NewExecuteShell(shell.Options{Sandbox: shell.SandboxBwrap, Bwrap: bwrap})
	if err != nil {
		t.Fatal(err)
	}
	line := "echo after > kept.txt; ls " + state + "/checkpoints/a-1/checkpoints 2>&1; ls " + state + " 2>&1"
	args, _ := json.Marshal(map[string]string{"command_line": line})
	out, err := commands.Run(context.Background(), c, commands.Env{Workspace: ws, AgentID: "a-1"}, args, commands.Limits{Timeout: time.Minute})
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if !strings.Contains(out, "No such file") || strings.Contains(out, "checkpoints\n") || strings.Contains(out, recordName(first.ID)) {
		t.Errorf("the sandbox sees the checkpoint store:\n%s", out)
	}
	after, w := walked(t, s, ws)
	if !w || after.ID == first.ID {
		t.Fatalf("the sandbox's write was missed: walked %v, checkpoint %d (was %d)\n%s", w, after.ID, first.ID, out)
	}
	d, err := s.Diff(context.Background(), first.ID, after.ID)
	if err != nil || d.Files != 1 {
		t.Fatalf("diff = %+v, %v", d, err)
	}
}

// The watches are on the old folders' inodes: a folder above the workspace renamed and
// a new workspace made at the same path queues no event for them, so the checkpoint
// compares the workspace's own device and inode before trusting the watch.
func TestCheckpointWalksAWorkspaceRecreatedUnderARenamedParent(t *testing.T) {
	top := t.TempDir()
	ws := filepath.Join(top, "parent", "ws")
	writeFiles(t, ws, map[string]string{"a.txt": "old"})
	s := openStore(t, Options{})
	first := settled(t, s, ws)
	if err := os.Rename(filepath.Join(top, "parent"), filepath.Join(top, "parent.old")); err != nil {
		t.Fatal(err)
	}
	writeFiles(t, ws, map[string]string{"a.txt": "new", "b.txt": "planted"})
	after, w := walked(t, s, ws)
	if !w || after.ID == first.ID {
		t.Fatalf("the recreated workspace was not walked (walked %v, checkpoint %d, was %d)", w, after.ID, first.ID)
	}
}

// A second name made outside the workspace queues no event on its folders, nor does a
// write through it: the fast path cannot see that, so a restore always walks, and puts
// back the file the outside name changed.
func TestRestoreWalksWhatTheWatchCannotSee(t *testing.T) {
	ws, outside := t.TempDir(), t.TempDir()
	writeFiles(t, ws, map[string]string{"a.txt": "mine"})
	s := openStore(t, Options{})
	c := settled(t, s, ws)
	if err := os.Link(filepath.Join(ws, "a.txt"), filepath.Join(outside, "x")); err != nil {
		t.Skip("no hard links here:", err)
	}
	f, err := os.OpenFile(filepath.Join(outside, "x"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte("MINE"), 0)
	f.Close()
	os.Remove(filepath.Join(outside, "x"))
	mustRestore(t, s, ws, c.ID)
	if b, _ := os.ReadFile(filepath.Join(ws, "a.txt")); string(b) != "mine" {
		t.Fatalf("a.txt reads %q after the restore: the change through the outside name was missed", b)
	}
}
