package shell

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/testutil"
)

// TestSandboxBindsTheWorkspaceItChecked checks that a run binds the very folders it
// checked, by descriptor, not their paths again: a workspace (or a folder on its path,
// as a parent agent could swap a helper's agents/NAME) swapped for a link to a lookalike
// elsewhere after the checks and before bwrap starts is not what the program sees or
// writes, and neither are the lookalike's .git/config and hooks, which the run binds
// read-only from the workspace. No descriptor of the host's reaches the program. It runs
// as whoever runs the suite, and again as a daemon that is not root.
func TestSandboxBindsTheWorkspaceItChecked(t *testing.T) {
	bwrap := bwrapHere(t)
	c := mustShell(t, Options{Sandbox: SandboxBwrap, Bwrap: bwrap})
	tests := []struct {
		name string
		swap string // the folder swapped, relative to the base; the workspace is base/a/ws
	}{
		{name: "workspace_folder", swap: "a/ws"},
		{name: "parent_folder", swap: "a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPathSwap(t, tt.swap)
			for dir, name := range map[string]string{p.ws: "checked", p.lookalike: "lookalike"} {
				if err := os.MkdirAll(filepath.Join(dir, ".git", "hooks"), 0o755); err != nil {
					t.Fatal(err)
				}
				for _, f := range []string{name, ".git/config"} {
					if err := os.WriteFile(filepath.Join(dir, f), []byte(name+"\n"), 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			testHookSandboxStarting = func() { p.swap(t) }
			defer func() { testHookSandboxStarting = nil }()
			got := mustRun(t, c, p.ws, `ls; cat .git/config; echo written > new; echo hooked > .git/hooks/pre-commit 2>/dev/null && echo wrote-a-hook; ls /proc/self/fd | tr '\n' ' '`, 30*time.Second)
			checkResult(t, got, p.ws, []string{"checked\nchecked\n", "0 1 2 3 "}, []string{"lookalike", "wrote-a-hook"})
			if _, err := os.Stat(filepath.Join(p.lookalike, "new")); err == nil {
				t.Errorf("the run wrote into the lookalike %s", p.lookalike)
			}
			if b, err := os.ReadFile(filepath.Join(p.moved, "new")); err != nil || string(b) != "written\n" {
				t.Errorf("the checked workspace, now %s, holds new = %q, %v; want what the run wrote", p.moved, b, err)
			}
		})
	}
	testutil.AsUnprivileged(t) // again as uid 65534, when the suite runs as root
}
