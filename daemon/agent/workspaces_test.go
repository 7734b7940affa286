package agent

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/daemon/store"
)

// escapeDirs is a parent workspace and, beside it, an outside folder holding a secret
// and a folder named like a helper, which no helper may ever reach.
func escapeDirs(t *testing.T) (ws, outside string) {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws, outside = filepath.Join(dir, "ws"), filepath.Join(dir, "outside")
	for _, d := range []string{ws, filepath.Join(outside, "fetcher")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{filepath.Join(outside, "secret.txt"), filepath.Join(outside, "fetcher", "secret.txt")} {
		if err := os.WriteFile(f, []byte("top secret"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return ws, outside
}

// checkOutside fails unless outside still holds exactly what escapeDirs put there.
func checkOutside(t *testing.T, outside string) {
	t.Helper()
	var got []string
	filepath.WalkDir(outside, func(p string, d fs.DirEntry, err error) error {
		if err == nil {
			got = append(got, strings.TrimPrefix(p, outside))
		}
		return nil
	})
	if want := "|/fetcher|/fetcher/secret.txt|/secret.txt"; strings.Join(got, "|") != want {
		t.Errorf("outside the workspace: %q, want %q", strings.Join(got, "|"), want)
	}
}

func TestMakeHelperWorkspaceRefusesLinks(t *testing.T) {
	tests := []struct {
		name    string
		plant   func(ws, outside string) error
		wantErr string
	}{
		{name: "agents_link_out", plant: func(ws, outside string) error { return os.Symlink(outside, filepath.Join(ws, "agents")) },
			wantErr: "agents is a symlink in your workspace; remove it (rm agents) and try again"},
		{name: "agents_link_root", plant: func(ws, _ string) error { return os.Symlink("/", filepath.Join(ws, "agents")) },
			wantErr: "agents is a symlink in your workspace"},
		{name: "agents_link_inside", plant: func(ws, _ string) error {
			os.Mkdir(filepath.Join(ws, "real"), 0o755)
			return os.Symlink("real", filepath.Join(ws, "agents"))
		}, wantErr: "agents is a symlink in your workspace"},
		{name: "agents_link_dangling", plant: func(ws, outside string) error {
			return os.Symlink(filepath.Join(outside, "new"), filepath.Join(ws, "agents"))
		}, wantErr: "agents is a symlink in your workspace"},
		{name: "agents_is_a_file", plant: func(ws, _ string) error { return os.WriteFile(filepath.Join(ws, "agents"), nil, 0o644) },
			wantErr: "agents is not a folder in your workspace"},
		{name: "helper_link_out", plant: func(ws, outside string) error {
			os.Mkdir(filepath.Join(ws, "agents"), 0o755)
			return os.Symlink(filepath.Join(outside, "fetcher"), filepath.Join(ws, "agents", "fetcher"))
		}, wantErr: "agents/fetcher is a symlink in your workspace; remove it (rm agents/fetcher)"},
		{name: "helper_link_relative_up", plant: func(ws, _ string) error {
			os.Mkdir(filepath.Join(ws, "agents"), 0o755)
			return os.Symlink("../../outside/fetcher", filepath.Join(ws, "agents", "fetcher"))
		}, wantErr: "agents/fetcher is a symlink in your workspace"},
		{name: "helper_is_a_file", plant: func(ws, _ string) error {
			os.Mkdir(filepath.Join(ws, "agents"), 0o755)
			return os.WriteFile(filepath.Join(ws, "agents", "fetcher"), nil, 0o644)
		}, wantErr: "agents/fetcher is not a folder in your workspace"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws, outside := escapeDirs(t)
			if err := tt.plant(ws, outside); err != nil {
				t.Fatal(err)
			}
			got, made, err := makeHelperWorkspace(ws, "fetcher")
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("makeHelperWorkspace = %q, %v, %v; want error containing %q", got, made, err, tt.wantErr)
			}
			checkOutside(t, outside)
		})
	}
}

func TestMakeHelperWorkspace(t *testing.T) {
	ws, _ := escapeDirs(t)
	got, made, err := makeHelperWorkspace(ws, "fetcher")
	if err != nil || !made || got != filepath.Join(ws, "agents", "fetcher") {
		t.Fatalf("first = %q, %v, %v", got, made, err)
	}
	if fi, err := os.Lstat(got); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Fatalf("helper workspace: %v, %v", fi, err)
	}
	// A helper made again (its record lost) finds its folder, and does not remove it on failure.
	if got2, made, err := makeHelperWorkspace(ws, "fetcher"); err != nil || made || got2 != got {
		t.Fatalf("again = %q, %v, %v", got2, made, err)
	}
}

// A parent that swaps agents (or agents/NAME) for a link after its helper exists does
// not redirect the helper: its file commands fail, naming the link, and removing the
// helper removes at most the link, never what it leads to.
func TestHelperWorkspaceSwappedForLink(t *testing.T) {
	tests := []struct {
		name       string
		swap       string // the name in the parent workspace replaced by a link
		target     func(outside string) string
		wantErr    string
		linkRemain bool
	}{
		{name: "agents_to_outside", swap: "agents", target: func(o string) string { return o },
			wantErr: "ws/agents in its path is a symlink", linkRemain: true},
		{name: "agents_to_root", swap: "agents", target: func(string) string { return "/" },
			wantErr: "ws/agents in its path is a symlink", linkRemain: true},
		{name: "helper_to_outside", swap: "agents/fetcher", target: func(o string) string { return filepath.Join(o, "fetcher") },
			wantErr: "ws/agents/fetcher in its path is a symlink"},
		{name: "helper_to_relative_outside", swap: "agents/fetcher", target: func(string) string { return "../../outside/fetcher" },
			wantErr: "ws/agents/fetcher in its path is a symlink"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws, outside := escapeDirs(t)
			hws, _, err := makeHelperWorkspace(ws, "fetcher")
			if err != nil {
				t.Fatal(err)
			}
			swapped := filepath.Join(ws, tt.swap)
			if err := os.RemoveAll(swapped); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(tt.target(outside), swapped); err != nil {
				t.Fatal(err)
			}
			env := commands.Env{Workspace: hws}
			for _, c := range []struct{ cmd, args string }{
				{"read_file", `{"path":"secret.txt"}`},
				{"write_file", `{"path":"secret.txt","contents":"pwned"}`},
				{"append_to_file", `{"path":"secret.txt","text":"pwned"}`},
				{"delete_file", `{"path":"secret.txt"}`},
				{"list_folder", `{"path":"."}`},
				{"search_files", `{"pattern":"**","text":"secret"}`},
			} {
				cmd, _ := commands.Lookup(c.cmd)
				out, err := commands.Run(context.Background(), cmd, env, []byte(c.args), commands.Limits{})
				if err == nil || !errors.Is(err, commands.ErrWorkspaceLink) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("%s = %q, %v; want an error containing %q", c.cmd, out, err, tt.wantErr)
				}
			}
			if p, err := commands.WorkspaceDir(hws); err == nil {
				t.Errorf("WorkspaceDir = %q, want an error for the sandbox too", p)
			}
			removeWorkspace(hws)
			checkOutside(t, outside)
			_, err = os.Lstat(swapped)
			if tt.linkRemain != (err == nil) {
				t.Errorf("after removal, the link %s: %v; want it kept: %v", tt.swap, err, tt.linkRemain)
			}
		})
	}
}

func TestRemoveWorkspace(t *testing.T) {
	ws, outside := escapeDirs(t)
	hws, _, err := makeHelperWorkspace(ws, "fetcher")
	if err != nil {
		t.Fatal(err)
	}
	// A link inside the helper's workspace is removed as a link.
	if err := os.Symlink(outside, filepath.Join(hws, "out")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(hws, "a.txt"), []byte("A"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := removeWorkspace(hws); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(hws); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("helper workspace after removal: %v", err)
	}
	if _, err := os.Stat(filepath.Join(ws, "agents")); err != nil {
		t.Errorf("the agents folder went too: %v", err)
	}
	checkOutside(t, outside)
	if err := removeWorkspace(filepath.Join(ws, "gone", "x")); err != nil {
		t.Errorf("removing under a missing folder: %v", err)
	}
}

// The operator's workspace_root may go through a link: it is resolved once, new agents get
// real paths, and paths stored through the link are mapped to real ones when loaded.
func TestWorkspaceRootResolvedOnce(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	real := filepath.Join(dir, "real")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	s := &workspaceDirs{configured: link, log: slog.New(slog.DiscardHandler)}
	if got := s.workspace("a-1"); got != filepath.Join(real, "a-1") {
		t.Fatalf("workspace = %q, want it under %q", got, real)
	}
	tests := []struct{ name, stored, want string }{
		{name: "stored_through_root_link", stored: filepath.Join(link, "a-1"), want: filepath.Join(real, "a-1")},
		{name: "stored_helper", stored: filepath.Join(link, "a-1", "agents", "x"), want: filepath.Join(real, "a-1", "agents", "x")},
		{name: "stored_real", stored: filepath.Join(real, "a-1"), want: filepath.Join(real, "a-1")},
		{name: "stored_elsewhere", stored: "/srv/ws", want: "/srv/ws"},
		{name: "prefix_only_by_name", stored: link + "x/a-1", want: link + "x/a-1"},
		{name: "empty", stored: "", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := s.realWorkspace(tt.stored); got != tt.want {
				t.Errorf("realWorkspace(%q) = %q, want %q", tt.stored, got, tt.want)
			}
		})
	}
	if err := makeWorkspace(s.workspace("a-1")); err != nil {
		t.Fatal(err)
	}
	if _, err := commands.WorkspaceDir(s.realWorkspace(filepath.Join(link, "a-1"))); err != nil {
		t.Errorf("a workspace stored through the root's link is unusable: %v", err)
	}
}

// Through the daemon: start_agent with agents planted as a link out fails with words the
// parent can act on, and creates nothing outside.
func TestStartAgentRefusesLinkedAgentsFolder(t *testing.T) {
	h, b := newHelperHarness(t)
	b.script("boss",
		reply("start_agent", map[string]string{"name": "fetcher", "task": "reads", "prompt": "read secret.txt"}))
	_, outside := escapeDirs(t)
	boss := h.boss()
	if err := os.Symlink(outside, filepath.Join(boss.Workspace, "agents")); err != nil {
		t.Fatal(err)
	}
	p := h.approve(boss.ID, "start_agent")
	ep := h.episode(boss.ID, p)
	if ep.Outcome == "succeeded" || !strings.Contains(ep.Result, "agents is a symlink in your workspace; remove it (rm agents) and try again") {
		t.Fatalf("start_agent episode = %+v", ep)
	}
	if _, err := h.sup.agentViews.Agent(context.Background(), "boss/fetcher"); !errors.Is(err, api.ErrNotFound) {
		t.Errorf("a helper was created: %v", err)
	}
	checkOutside(t, outside)
}

// An agent stored with its workspace through the operator's linked workspace_root (as
// before paths were stored real) is rewritten to the real path at start, and works.
func TestStoredWorkspaceThroughRootLinkResolvedAtStart(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	real, link := filepath.Join(dir, "real"), filepath.Join(dir, "link")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, func(o *Options) { o.WorkspaceRoot = link })
	a := h.create(api.CreateAgentRequest{Name: "old"})
	if a.Workspace != filepath.Join(real, a.ID) {
		t.Fatalf("new agent's workspace = %q, want the real path under %q", a.Workspace, real)
	}
	old := filepath.Join(link, a.ID)
	if err := h.st.Tx(context.Background(), func(tx *store.Tx) error { return tx.SetWorkspace(a.ID, old) }); err != nil {
		t.Fatal(err)
	}
	if _, err := commands.WorkspaceDir(old); !errors.Is(err, commands.ErrWorkspaceLink) {
		t.Fatalf("WorkspaceDir(%q) = %v, want a refusal of the link", old, err)
	}
	h.stop()
	h.start()
	got, err := h.sup.agentViews.Agent(context.Background(), a.ID)
	if err != nil || got.Workspace != a.Workspace {
		t.Fatalf("after restart: %v, %v; want workspace %q", got, err, a.Workspace)
	}
	if _, err := commands.WorkspaceDir(got.Workspace); err != nil {
		t.Errorf("resolved workspace unusable: %v", err)
	}
}

// Through the daemon: removing a helper whose agents/NAME, or whose parent's agents, a
// link replaced removes at most the link, and removing the parent removes the link too,
// never what either leads to.
func TestDeleteAgentsAfterLinkSwapLeavesTargets(t *testing.T) {
	for _, swap := range []string{"agents/fetcher", "agents"} {
		t.Run(strings.ReplaceAll(swap, "/", "_"), func(t *testing.T) {
			h, b := newHelperHarness(t)
			b.script("boss", reply("start_agent", map[string]string{"name": "fetcher", "task": "waits", "prompt": "wait"}))
			_, outside := escapeDirs(t)
			boss := h.boss()
			h.approve(boss.ID, "start_agent")
			helper := h.helper("boss/fetcher")
			swapped := filepath.Join(boss.Workspace, swap)
			if err := os.RemoveAll(swapped); err != nil {
				t.Fatal(err)
			}
			target := filepath.Join(outside, strings.TrimPrefix(swap, "agents"))
			if err := os.Symlink(target, swapped); err != nil {
				t.Fatal(err)
			}
			if err := h.sup.runs.DeleteAgent(context.Background(), helper.ID); err != nil {
				t.Fatal(err)
			}
			checkOutside(t, outside)
			if err := h.sup.runs.DeleteAgent(context.Background(), boss.ID); err != nil {
				t.Fatal(err)
			}
			checkOutside(t, outside)
			if _, err := os.Lstat(boss.Workspace); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("the parent's workspace after removal: %v", err)
			}
		})
	}
}
