package shell

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestPlantedBareRepository: files the agent may write (HEAD, objects/, refs/ and config,
// by echo and mkdir) make the workspace a bare repository to git's discovery; git must not
// obey its config (remote.o.uploadpack, a command), under every sandbox mode.
func TestPlantedBareRepository(t *testing.T) {
	for _, mode := range modes(t) {
		t.Run(mode, func(t *testing.T) {
			o := Options{Sandbox: mode}
			if mode == SandboxBwrap {
				o.Bwrap = bwrapHere(t)
			}
			c := mustShell(t, o)
			tests := []struct{ name, line string }{
				{"fetch_runs_uploadpack", "git fetch o"},
				{"pull_runs_uploadpack", "git pull o"},
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					ws := workspace(t)
					os.MkdirAll(filepath.Join(ws, "objects"), 0o755)
					os.MkdirAll(filepath.Join(ws, "refs"), 0o755)
					os.WriteFile(filepath.Join(ws, "HEAD"), []byte("ref: refs/heads/main\n"), 0o644)
					cfg := "[core]\n\tbare = true\n[remote \"o\"]\n\turl = .\n\tuploadpack = \"touch planted-ran; false\"\n"
					os.WriteFile(filepath.Join(ws, "config"), []byte(cfg), 0o644)
					out, err := run(context.Background(), t, c, ws, shellLine(tt.line), time.Minute)
					if _, err := os.Stat(filepath.Join(ws, "planted-ran")); err == nil {
						t.Fatalf("%q ran the planted repository's uploadpack:\n%s", tt.line, out)
					}
					if all := out + fmt.Sprint(err); !strings.Contains(all, "bare") && !strings.Contains(all, "not a git repository") {
						t.Errorf("%q: want git's refusal of the bare repository, got:\n%s", tt.line, all)
					}
				})
			}
		})
	}
}

// TestHomeConfigIgnored: HOME is the workspace, so the agent writes ~/.gitconfig and
// ~/.config/git/config; git must obey neither (core.fsmonitor and core.sshCommand run a
// command), under every sandbox mode.
func TestHomeConfigIgnored(t *testing.T) {
	for _, mode := range modes(t) {
		t.Run(mode, func(t *testing.T) {
			o := Options{Sandbox: mode}
			if mode == SandboxBwrap {
				o.Bwrap = bwrapHere(t)
			}
			c := mustShell(t, o)
			tests := []struct{ name, file, text, line string }{
				{"gitconfig_fsmonitor", ".gitconfig", "[core]\n\tfsmonitor = \"touch home-ran; false\"\n", "git status --short"},
				{"xdg_config_fsmonitor", ".config/git/config", "[core]\n\tfsmonitor = \"touch home-ran; false\"\n", "git status --short"},
				{"gitconfig_ssh_command", ".gitconfig", "[core]\n\tsshCommand = \"touch home-ran; false\"\n", "git ls-remote ssh://example.invalid/r"},
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					ws := workspace(t)
					if out, err := run(context.Background(), t, c, ws, shellLine("git init -q . && echo hi > a && git add a"), time.Minute); err != nil {
						t.Fatalf("setting up the repository: %v\n%s", err, out)
					}
					os.MkdirAll(filepath.Dir(filepath.Join(ws, tt.file)), 0o755)
					if err := os.WriteFile(filepath.Join(ws, tt.file), []byte(tt.text), 0o644); err != nil {
						t.Fatal(err)
					}
					out, err := run(context.Background(), t, c, ws, shellLine(tt.line), time.Minute)
					if _, serr := os.Stat(filepath.Join(ws, "home-ran")); serr == nil {
						t.Fatalf("%q obeyed the agent's %s:\n%s %v", tt.line, tt.file, out, err)
					}
				})
			}
		})
	}
}
