package commands

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/testutil"
)

// sandbox is a temp dir holding a workspace and, beside it, an outside folder the escape
// tests must never read or change.
type sandbox struct {
	dir     string // the parent of both
	ws      string // the workspace, with its symlinks resolved
	outside string
}

const secret = "top secret"

// newSandbox builds:
//
//	outside/secret.txt             "top secret"
//	ws/docs/readme.txt             "hello"
//	ws/docs/up       -> ../..      (relative, escapes to the parent)
//	ws/inside        -> docs       (relative, stays inside)
//	ws/absinside     -> WS/docs    (absolute, stays inside)
//	ws/etc           -> /etc
//	ws/passwd        -> /etc/passwd
//	ws/out           -> OUTSIDE
//	ws/secret        -> OUTSIDE/secret.txt
//	ws/dangling      -> OUTSIDE/created.txt (does not exist)
//	ws/loop          -> loop
func newSandbox(t testing.TB) *sandbox {
	t.Helper()
	dir := testutil.ResolvedTempDir(t)
	s := &sandbox{dir: dir, ws: filepath.Join(dir, "ws"), outside: filepath.Join(dir, "outside")}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(s.ws, "docs"), 0o755))
	must(os.MkdirAll(s.outside, 0o755))
	must(os.WriteFile(filepath.Join(s.outside, "secret.txt"), []byte(secret), 0o644))
	must(os.WriteFile(filepath.Join(s.ws, "docs", "readme.txt"), []byte("hello"), 0o644))
	links := map[string]string{
		"docs/up":   "../..",
		"inside":    "docs",
		"absinside": filepath.Join(s.ws, "docs"),
		"etc":       "/etc",
		"passwd":    "/etc/passwd",
		"out":       s.outside,
		"secret":    filepath.Join(s.outside, "secret.txt"),
		"dangling":  filepath.Join(s.outside, "created.txt"),
		"loop":      "loop",
	}
	for name, target := range links {
		must(os.Symlink(target, filepath.Join(s.ws, name)))
	}
	return s
}

// snapshot records everything under the sandbox except the workspace: names, modes,
// contents and link targets.
func (s *sandbox) snapshot(t *testing.T) map[string]string {
	return treeSnapshot(t, s.dir, s.ws)
}

// checkUntouched fails if anything outside the workspace differs from before.
func (s *sandbox) checkUntouched(t *testing.T, before map[string]string) {
	t.Helper()
	checkSameTree(t, "outside the workspace ", before, s.snapshot(t))
}

// checkSameTree fails for each path that after holds differently from before, or lacks;
// where (with a trailing space) says in a failure which tree the path is in.
func checkSameTree(t *testing.T, where string, before, after map[string]string) {
	t.Helper()
	for p, v := range after {
		if before[p] != v {
			t.Errorf("%s%s changed: %q -> %q", where, p, before[p], v)
		}
	}
	for p := range before {
		if _, ok := after[p]; !ok {
			t.Errorf("%s%s disappeared", where, p)
		}
	}
}

// escapes is the corpus of paths that must be refused by every file command.
func escapes(s *sandbox) map[string]string {
	return map[string]string{
		"dot_dot":                "..",
		"dot_dot_file":           "../x",
		"dot_dot_outside":        "../outside/secret.txt",
		"dot_dot_after_name":     "a/../../x",
		"dot_dot_through_docs":   "docs/../../outside/secret.txt",
		"absolute_etc_passwd":    "/etc/passwd",
		"absolute_root":          "/",
		"absolute_outside":       filepath.Join(s.outside, "secret.txt"),
		"absolute_inside":        filepath.Join(s.ws, "docs", "readme.txt"),
		"symlink_to_etc":         "etc/passwd",
		"symlink_to_etc_itself":  "etc",
		"symlink_to_file_out":    "passwd",
		"symlink_dir_out_file":   "out/secret.txt",
		"symlink_dir_out_new":    "out/new.txt",
		"symlink_final_out":      "secret",
		"symlink_final_dangling": "dangling",
		"symlink_relative_up":    "docs/up/outside/secret.txt",
		"symlink_loop":           "loop",
		"name_too_long":          strings.Repeat("n", 256),
		"path_too_long":          strings.Repeat("d/", 2048) + "f",
		"nul_byte":               "docs/readme.txt\x00.png",
		"empty":                  "",
	}
}

func TestResolvePath(t *testing.T) {
	s := newSandbox(t)
	for name, target := range map[string]string{
		"gone": "docs/missing.txt", "through": "docs/readme.txt/x", "chain": "inside",
		"chainout": "docs/up/outside", "updocs": "docs/../docs/../docs",
	} {
		if err := os.Symlink(target, filepath.Join(s.ws, name)); err != nil {
			t.Fatal(err)
		}
	}
	long := strings.Repeat("n", 255)
	tests := []struct {
		name, path string
		want       string // relative to the workspace; empty when an error is expected
		wantErr    string
	}{
		{name: "root", path: ".", want: "."},
		{name: "root_trailing_slash", path: "./", want: "."},
		{name: "folder", path: "docs", want: "docs"},
		{name: "file", path: "docs/readme.txt", want: "docs/readme.txt"},
		{name: "missing_file", path: "new/dir/file.txt", want: "new/dir/file.txt"},
		{name: "dot_dot_inside", path: "docs/../docs/readme.txt", want: "docs/readme.txt"},
		{name: "double_slash", path: "docs//readme.txt", want: "docs/readme.txt"},
		{name: "symlink_inside", path: "inside/readme.txt", want: "docs/readme.txt"},
		{name: "absolute_symlink_inside", path: "absinside/readme.txt", want: "docs/readme.txt"},
		{name: "symlink_inside_new", path: "inside/new.txt", want: "docs/new.txt"},
		{name: "longest_name", path: long, want: long},
		{name: "dot_dot", path: "..", wantErr: `path ".." leaves the workspace`},
		{name: "dot_dot_file", path: "../x", wantErr: `path "../x" leaves the workspace`},
		{name: "dot_dot_after_name", path: "a/../../x", wantErr: `path "a/../../x" leaves the workspace`},
		{name: "absolute", path: "/etc/passwd", wantErr: `path "/etc/passwd" is absolute; give a path relative to the workspace`},
		{name: "absolute_inside", path: filepath.Join(s.ws, "docs"), wantErr: "is absolute"},
		{name: "empty", path: "", wantErr: `path "" is empty; use "." for the workspace folder itself`},
		{name: "nul_byte", path: "a\x00b", wantErr: `path "a\x00b" contains a NUL byte`},
		{name: "name_too_long", path: "docs/" + long + "x", wantErr: "has a name of 256 bytes; the limit is 255"},
		{name: "path_too_long", path: strings.Repeat("d/", 2048) + "f", wantErr: "is 4097 bytes long; the limit is 4096"},
		{name: "symlink_to_etc", path: "etc/passwd", wantErr: `path "etc/passwd" goes through a symlink that leads outside the workspace`},
		{name: "symlink_final_to_etc", path: "etc", wantErr: `path "etc" is a symlink that leads outside the workspace`},
		{name: "symlink_dir_out_file", path: "out/secret.txt", wantErr: "goes through a symlink that leads outside"},
		{name: "symlink_dir_out_new", path: "out/new/deeper.txt", wantErr: "goes through a symlink that leads outside"},
		{name: "symlink_final_out", path: "secret", wantErr: `path "secret" is a symlink that leads outside the workspace`},
		{name: "symlink_relative_up", path: "docs/up/outside", wantErr: "goes through a symlink that leads outside"},
		{name: "symlink_inside_then_up", path: "inside/up/ws", wantErr: "goes through a symlink that leads outside"},
		// Whether a link's target exists outside is not the model's to learn.
		{name: "symlink_dangling_outside", path: "dangling", wantErr: `path "dangling" is a symlink that leads outside the workspace`},
		{name: "symlink_dangling", path: "gone", wantErr: `path "gone" is a symlink that leads nowhere`},
		{name: "symlink_through_a_file", path: "through", wantErr: `path "through" is a symlink that leads nowhere`},
		{name: "symlink_chain_inside", path: "chain/readme.txt", want: "docs/readme.txt"},
		{name: "symlink_chain_out", path: "chainout/secret.txt", wantErr: "goes through a symlink that leads outside"},
		{name: "symlink_dot_dot_inside", path: "updocs/readme.txt", want: "docs/readme.txt"},
		{name: "symlink_loop", path: "loop/x", wantErr: `path "loop/x" goes through a symlink that leads nowhere`},
		{name: "through_a_file", path: "docs/readme.txt/x", wantErr: `goes through "docs/readme.txt", which is a file, not a folder`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ResolvePath(s.ws, tt.path)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ResolvePath(%q) = %q, %v; want error containing %q", tt.path, got, err, tt.wantErr)
				}
				if !errors.Is(err, ErrBadPath) {
					t.Errorf("error %v does not wrap ErrBadPath", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ResolvePath(%q): %v", tt.path, err)
			}
			if want := filepath.Join(s.ws, tt.want); got != want {
				t.Errorf("ResolvePath(%q) = %q, want %q", tt.path, got, want)
			}
		})
	}
}

func TestResolvePathRefusesEscapeCorpus(t *testing.T) {
	s := newSandbox(t)
	for name, p := range escapes(s) {
		t.Run(name, func(t *testing.T) {
			got, err := ResolvePath(s.ws, p)
			if err == nil {
				t.Fatalf("ResolvePath(%q) = %q, want an error", p, got)
			}
			if len(err.Error()) > 200 {
				t.Errorf("error is %d bytes long, too long for a prompt: %.100s...", len(err.Error()), err)
			}
		})
	}
}

func TestResolvePathWorkspace(t *testing.T) {
	s := newSandbox(t)
	link := filepath.Join(s.dir, "wslink")
	if err := os.Symlink(s.ws, link); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(s.outside, "secret.txt")
	tests := []struct {
		name, workspace string
		want, wantErr   string
	}{
		{name: "workspace_real_path", workspace: s.ws, want: filepath.Join(s.ws, "docs")},
		{name: "workspace_unclean_path", workspace: s.ws + "/./", want: filepath.Join(s.ws, "docs")},
		// A link in the workspace's own path could be swapped to send the whole workspace
		// elsewhere: the daemon stores real paths, so one found here is refused.
		{name: "workspace_via_symlink", workspace: link, wantErr: "wslink in its path is a symlink"},
		{name: "workspace_below_symlink", workspace: filepath.Join(link, "docs"), wantErr: "is a symlink"},
		{name: "no_workspace", workspace: "", wantErr: "no workspace folder is set"},
		{name: "missing_workspace", workspace: filepath.Join(s.dir, "nope"), wantErr: "is not usable"},
		{name: "workspace_is_a_file", workspace: file, wantErr: "is not a folder"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ResolvePath(tt.workspace, "docs")
			if testutil.WantErr(t, err, tt.wantErr) {
				return
			}
			if got != tt.want {
				t.Fatalf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

// A symlink swapped in after the check must not let the operation out: os.Root refuses it,
// and the error names the problem as the check would have.
func TestOpenInRefusesSymlinkSwappedInAfterCheck(t *testing.T) {
	s := newSandbox(t)
	before := s.snapshot(t)
	if err := os.Mkdir(filepath.Join(s.ws, "swap"), 0o755); err != nil {
		t.Fatal(err)
	}
	root, _, rel, err := openIn(s.ws, "swap/new.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	if err := os.Remove(filepath.Join(s.ws, "swap")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(s.outside, filepath.Join(s.ws, "swap")); err != nil {
		t.Fatal(err)
	}
	f, err := root.OpenFile(rel, os.O_WRONLY|os.O_CREATE, 0o644)
	if err == nil {
		f.Close()
		t.Fatal("os.Root followed a symlink out of the workspace")
	}
	err = fsError(s.ws, "swap/new.txt", err)
	if !errors.Is(err, ErrBadPath) || !strings.Contains(err.Error(), "leads outside the workspace") {
		t.Errorf("fsError = %v, want a refusal naming the symlink", err)
	}
	s.checkUntouched(t, before)
}

// The workspace's own path may hold no symlink, whoever planted it and whenever.
func TestOpenWorkspace(t *testing.T) {
	s := newSandbox(t)
	if err := os.MkdirAll(filepath.Join(s.ws, "agents", "h"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(s.ws, "agents"), filepath.Join(s.dir, "agentslink")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, ws, wantErr string
	}{
		{name: "real", ws: s.ws},
		{name: "nested_real", ws: filepath.Join(s.ws, "agents", "h")},
		{name: "relative_parts", ws: filepath.Join(s.ws, "agents", "..", "agents", "h")},
		{name: "last_is_link", ws: filepath.Join(s.ws, "out"), wantErr: "out in its path is a symlink"},
		{name: "middle_is_link", ws: filepath.Join(s.dir, "agentslink", "h"), wantErr: "agentslink in its path is a symlink"},
		{name: "link_inside_to_inside", ws: filepath.Join(s.ws, "inside"), wantErr: "inside in its path is a symlink"},
		{name: "loop", ws: filepath.Join(s.ws, "loop"), wantErr: "loop in its path is a symlink"},
		{name: "dangling", ws: filepath.Join(s.ws, "dangling"), wantErr: "dangling in its path is a symlink"},
		{name: "missing", ws: filepath.Join(s.ws, "nope"), wantErr: "it does not exist"},
		{name: "file", ws: filepath.Join(s.ws, "docs", "readme.txt"), wantErr: "is not a folder"},
		{name: "empty", ws: "", wantErr: "no workspace folder is set"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, err := WorkspaceDir(tt.ws)
			f, ferr := OpenWorkspaceDir(tt.ws)
			if ferr == nil {
				f.Close()
			}
			if tt.wantErr == "" {
				if err != nil || ferr != nil || dir != filepath.Clean(tt.ws) {
					t.Fatalf("WorkspaceDir = %q, %v; OpenWorkspaceDir: %v", dir, err, ferr)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("WorkspaceDir = %q, %v; want an error containing %q", dir, err, tt.wantErr)
			}
			if ferr == nil {
				t.Errorf("OpenWorkspaceDir opened what WorkspaceDir refused")
			}
			if strings.Contains(tt.wantErr, "symlink") && !errors.Is(err, ErrWorkspaceLink) {
				t.Errorf("error %v does not wrap ErrWorkspaceLink", err)
			}
		})
	}
}

// A link swapped into the workspace's path between the walk and the Root's open gives
// another folder, and is refused.
func TestOpenWorkspaceRefusesLinkSwappedAfterWalk(t *testing.T) {
	s := newSandbox(t)
	h := filepath.Join(s.ws, "h")
	if err := os.Mkdir(h, 0o755); err != nil {
		t.Fatal(err)
	}
	testHookWorkspaceWalked = func() {
		testHookWorkspaceWalked = nil
		if err := os.Rename(h, h+".old"); err != nil {
			t.Error(err)
		}
		if err := os.Symlink(s.outside, h); err != nil {
			t.Error(err)
		}
	}
	t.Cleanup(func() { testHookWorkspaceWalked = nil })
	r, err := OpenWorkspace(h)
	if err == nil {
		r.Close()
		t.Fatal("OpenWorkspace opened a folder reached through a link swapped in after its walk")
	}
	if !errors.Is(err, ErrWorkspaceLink) || !strings.Contains(err.Error(), "changed while it was opened") {
		t.Errorf("error = %v, want one naming the swap", err)
	}
}

// TestResolveLinks checks the path permission rules match besides the one written: the
// workspace's symlinks resolved, as the file commands open it.
func TestResolveLinks(t *testing.T) {
	s := newSandbox(t)
	for _, d := range []string{"secrets", "pub"} {
		os.MkdirAll(filepath.Join(s.ws, d), 0o755)
	}
	os.WriteFile(filepath.Join(s.ws, "secrets/key"), []byte("k"), 0o600)
	os.Symlink("../secrets/key", filepath.Join(s.ws, "pub/key"))
	os.Symlink("../secrets", filepath.Join(s.ws, "pub/dir"))
	os.Symlink(s.outside, filepath.Join(s.ws, "pub/out"))
	tests := []struct {
		name, path, want string
		wantErr          bool
	}{
		{name: "file_link", path: "pub/key", want: "secrets/key"},
		{name: "through_folder_link", path: "pub/dir/key", want: "secrets/key"},
		{name: "new_file_in_linked_folder", path: "pub/dir/new", want: "secrets/new"},
		{name: "cleaned_first", path: "./pub//dir/../key", want: "secrets/key"},
		{name: "no_link", path: "pub/plain", want: "pub/plain"},
		{name: "link_out_refused", path: "pub/out/x", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ResolveLinks(s.ws, tt.path)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("ResolveLinks(%q) = %q, %v; want %q (error %v)", tt.path, got, err, tt.want, tt.wantErr)
			}
		})
	}
}

// DiskUsage counts what a workspace takes on disk: data written, empty files at a block
// each (their inodes are disk too), a hard-linked file once, and nothing a link points to.
func TestDiskUsage(t *testing.T) {
	ws := testutil.ResolvedTempDir(t)
	empty, err := DiskUsage(ws)
	if err != nil || empty != MinEntryBytes && empty%MinEntryBytes != 0 {
		t.Fatalf("empty workspace: %d, %v", empty, err)
	}
	if err := os.WriteFile(filepath.Join(ws, "data"), make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(ws, "a", "b"), 0o755)
	for i := range 100 {
		os.WriteFile(filepath.Join(ws, "a", "b", "empty"+strconv.Itoa(i)), nil, 0o644)
	}
	os.Link(filepath.Join(ws, "data"), filepath.Join(ws, "a", "data-again"))
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "big"), make([]byte, 4<<20), 0o644)
	os.Symlink(outside, filepath.Join(ws, "link-out"))

	got, err := DiskUsage(ws)
	if err != nil {
		t.Fatal(err)
	}
	low := empty + 1<<20 + 100*MinEntryBytes // the data, once, and a block per empty file
	if got < low || got > low+64*MinEntryBytes {
		t.Errorf("DiskUsage = %d, want about %d: 1 MiB of data counted once, 100 empty files, not the 4 MiB a link points to", got, low)
	}
}

// BenchmarkDiskUsage measures a workspace of 10,000 files in 100 folders, as the disk
// budget does after each command that may write.
func BenchmarkDiskUsage(b *testing.B) {
	ws := testutil.ResolvedTempDir(b)
	for i := range 10000 {
		dir := filepath.Join(ws, "d"+strconv.Itoa(i%100))
		os.MkdirAll(dir, 0o755)
		os.WriteFile(filepath.Join(dir, "f"+strconv.Itoa(i)), []byte("x"), 0o644)
	}
	for b.Loop() {
		if _, err := DiskUsage(ws); err != nil {
			b.Fatal(err)
		}
	}
}

// TestContextItemsKeepTheirTarget checks that an open file or folder, shown again at every
// step without asking, keeps showing what was approved when it was opened: a link swapped
// in between two steps (by the shell, or a helper in agents/) that points the same path
// at another file of the workspace is not followed there.
func TestContextItemsKeepTheirTarget(t *testing.T) {
	tests := []struct {
		name, kind, path string
		before, after    string // what path is (a link target, or "" for a plain file) at open and later
		wantShown        bool
	}{
		{name: "file_relinked", kind: "open_file", path: "pub/k", before: "../docs/readme.txt", after: "../private/key"},
		{name: "plain_file_replaced_by_link", kind: "open_file", path: "pub/k", before: "", after: "../private/key"},
		{name: "folder_relinked", kind: "open_folder", path: "pub/d", before: "../docs", after: "../private"},
		{name: "same_link_kept", kind: "open_file", path: "pub/k", before: "../docs/readme.txt", after: "../docs/readme.txt", wantShown: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSandbox(t)
			for _, d := range []string{"pub", "private"} {
				os.MkdirAll(filepath.Join(s.ws, d), 0o755)
			}
			os.WriteFile(filepath.Join(s.ws, "private/key"), []byte("private-key-content\n"), 0o600)
			p := filepath.Join(s.ws, tt.path)
			place := func(target string) {
				os.RemoveAll(p)
				if target == "" {
					os.WriteFile(p, []byte("plain\n"), 0o644)
					return
				}
				if err := os.Symlink(target, p); err != nil {
					t.Fatal(err)
				}
			}
			place(tt.before)
			st := memState{}
			step := &Step{Workspace: s.ws, State: st, Now: time.Now(), Budget: 5000}
			cmds, _ := ContextItems{}.Commands(context.Background(), step)
			cmd, _ := Set(cmds).Get(tt.kind)
			if _, err := Run(context.Background(), cmd, Env{Workspace: s.ws, State: st}, json.RawMessage(`{"path":"`+tt.path+`"}`), Limits{}); err != nil {
				t.Fatal(err)
			}
			place(tt.after)
			msgs, err := ContextItems{}.Messages(context.Background(), step)
			if err != nil || len(msgs) != 1 {
				t.Fatalf("messages %q, %v", msgs, err)
			}
			if leaked := strings.Contains(msgs[0], "private-key-content") || strings.Contains(msgs[0], "\nkey"); leaked {
				t.Errorf("the open item followed the new link:\n%s", msgs[0])
			}
			if shown := strings.Contains(msgs[0], "hello"); shown != tt.wantShown {
				t.Errorf("content shown %v, want %v:\n%s", shown, tt.wantShown, msgs[0])
			}
		})
	}
}
