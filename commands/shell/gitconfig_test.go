package shell

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/commands"
)

// TestPlantedBareRepository: files the agent may write (HEAD, objects/, refs/ and config,
// by echo and mkdir) make the workspace a bare repository to git's discovery; git must not
// obey its config (remote.o.uploadpack, a command), under every sandbox mode.
func TestPlantedBareRepository(t *testing.T) {
	inEveryMode(t, func(t *testing.T, c commands.Command) {
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

// TestHomeConfigIgnored: HOME is the workspace, so the agent writes ~/.gitconfig and
// ~/.config/git/config; git must obey neither (core.fsmonitor and core.sshCommand run a
// command), under every sandbox mode.
func TestHomeConfigIgnored(t *testing.T) {
	inEveryMode(t, func(t *testing.T, c commands.Command) {
		checkHomeFilesIgnored(t, c, func(t *testing.T, ws string) {
			if out, err := run(context.Background(), t, c, ws, shellLine("git init -q . && echo hi > a && git add a"), time.Minute); err != nil {
				t.Fatalf("setting up the repository: %v\n%s", err, out)
			}
		}, []homeFile{
			{"gitconfig_fsmonitor", ".gitconfig", "[core]\n\tfsmonitor = \"touch home-ran; false\"\n", "git status --short"},
			{"xdg_config_fsmonitor", ".config/git/config", "[core]\n\tfsmonitor = \"touch home-ran; false\"\n", "git status --short"},
			{"gitconfig_ssh_command", ".gitconfig", "[core]\n\tsshCommand = \"touch home-ran; false\"\n", "git ls-remote ssh://example.invalid/r"},
		})
	})
}

// TestHomeSettingsIgnored: other programs' settings in HOME (the workspace) that run code
// are not read either: less's lesskey (#env LESSOPEN) and python's user site-packages (a
// .pth file). go's env file (GOFLAGS=-toolexec) is switched off with GOENV=off.
func TestHomeSettingsIgnored(t *testing.T) {
	if _, err := exec.LookPath("less"); err != nil {
		t.Fatalf("less is not installed: %v", err)
	}
	pyver, err := exec.Command("python3", "-c", "import sys; print(f'python{sys.version_info[0]}.{sys.version_info[1]}')").Output()
	if err != nil {
		t.Fatal(err)
	}
	site := ".local/lib/" + strings.TrimSpace(string(pyver)) + "/site-packages/x.pth"
	inEveryMode(t, func(t *testing.T, c commands.Command) {
		checkHomeFilesIgnored(t, c, func(t *testing.T, ws string) {
			os.WriteFile(filepath.Join(ws, "f"), []byte("hi\n"), 0o644)
		}, []homeFile{
			{"lesskey_lessopen", ".lesskey", "#env\nLESSOPEN=|touch home-ran; cat %s\n", "less f"},
			{"python_user_site_pth", site, "import os; open('home-ran', 'w')\n", "python3 -c pass"},
		})
	})
	env := Options{}.env("/home/sandbox", false, false)
	if !slices.Contains(env, "GOENV=off") {
		t.Errorf("env %q lacks GOENV=off: go would read GOFLAGS from the agent's ~/.config/go/env", env)
	}
}

// inEveryMode runs f as a subtest per sandbox mode, with a shell command in that mode.
func inEveryMode(t *testing.T, f func(t *testing.T, c commands.Command)) {
	for _, mode := range modes(t) {
		t.Run(mode, func(t *testing.T) {
			o := Options{Sandbox: mode}
			if mode == SandboxBwrap {
				o.Bwrap = bwrapHere(t)
			}
			f(t, mustShell(t, o))
		})
	}
}

// homeFile is a settings file the agent plants in HOME (its workspace) and a line that
// would obey it by creating home-ran.
type homeFile struct{ name, file, text, line string }

// checkHomeFilesIgnored plants each file in a fresh workspace made ready by prepare, runs
// its line, and fails if the line obeyed the file.
func checkHomeFilesIgnored(t *testing.T, c commands.Command, prepare func(t *testing.T, ws string), files []homeFile) {
	for _, tt := range files {
		t.Run(tt.name, func(t *testing.T) {
			ws := workspace(t)
			prepare(t, ws)
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
}
