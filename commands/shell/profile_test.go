package shell

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/commands/permission"
)

// runAs runs a shell line in ws under profile p, as the daemon does for a command that
// profile's approval let through.
func runAs(t testing.TB, c commands.Command, ws string, p commands.Profile, line string) (string, error) {
	t.Helper()
	args, _ := json.Marshal(shellLine(line))
	return commands.Run(context.Background(), c, commands.Env{Workspace: ws, AgentID: "a-test", Profile: p}, args, commands.Limits{Timeout: time.Minute})
}

// gitRepo makes a repository at dir (inside ws or not) with one committed file.
func gitRepo(t testing.TB, dir string) {
	t.Helper()
	os.MkdirAll(dir, 0o755)
	for _, args := range [][]string{{"init", "-q", "."}, {"-c", "user.email=a@b", "-c", "user.name=a", "commit", "-q", "--allow-empty", "-m", "x"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
}

// plantFsmonitor sets core.fsmonitor in the config file cfg to a program that says it ran.
func plantFsmonitor(t *testing.T, cfg string) {
	t.Helper()
	f, err := os.OpenFile(cfg, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fmt.Fprintf(f, "[core]\n\tfsmonitor = \"echo AGENT-CODE-RAN >&2; false\"\n")
}

// TestBoundedRunLoadsNoCodeOfTheAgents: under an allow pattern, a program that loads code
// from a file the agent wrote — git's core.fsmonitor found through every way git finds a
// repository, python's current folder — runs none of it; and where a program does load it
// (curl --engine), that code changes nothing: the workspace is read-only and the network
// off. A person's own approval of the same line (the zero Profile) keeps today's sandbox,
// which is how each case shows it could fail.
func TestBoundedRunLoadsNoCodeOfTheAgents(t *testing.T) {
	bwrap := bwrapHere(t)
	c := mustShell(t, Options{Sandbox: SandboxBwrap, Bwrap: bwrap, Network: true})
	bounded := commands.Profile{Bounded: true}
	tests := []struct {
		name  string
		setup func(t *testing.T, ws string)
		line  string
	}{
		{"git_status_gitfile", func(t *testing.T, ws string) {
			// A .git file sends git to a repository whose config is not protected.
			real := filepath.Join(ws, "elsewhere")
			gitRepo(t, real)
			os.MkdirAll(filepath.Join(ws, "proj"), 0o755)
			os.Rename(filepath.Join(real, ".git"), filepath.Join(ws, "proj", "real.git"))
			os.WriteFile(filepath.Join(ws, "proj", ".git"), []byte("gitdir: real.git\n"), 0o644)
			plantFsmonitor(t, filepath.Join(ws, "proj", "real.git", "config"))
		}, "cd proj && git status --short"},
		{"git_status_commondir", func(t *testing.T, ws string) {
			gitRepo(t, filepath.Join(ws, "main"))
			// A worktree's gitdir names a common dir whose config git reads.
			wt := filepath.Join(ws, "main", ".git", "worktrees", "w")
			os.MkdirAll(wt, 0o755)
			os.WriteFile(filepath.Join(wt, "commondir"), []byte("../..\n"), 0o644)
			os.WriteFile(filepath.Join(wt, "HEAD"), []byte("ref: refs/heads/master\n"), 0o644)
			os.WriteFile(filepath.Join(wt, "gitdir"), []byte(filepath.Join(ws, "w", ".git")+"\n"), 0o644)
			os.MkdirAll(filepath.Join(ws, "w"), 0o755)
			os.WriteFile(filepath.Join(ws, "w", ".git"), []byte("gitdir: "+wt+"\n"), 0o644)
			// The main repository's config is protected under its .git; the planted key
			// sits in config.worktree, read with extensions.worktreeConfig.
			plantFsmonitor(t, filepath.Join(ws, "main", ".git", "config"))
		}, "cd w && git status --short"},
		{"git_status_nested_three_deep", func(t *testing.T, ws string) {
			deep := filepath.Join(ws, "a", "b", "c")
			gitRepo(t, deep)
			plantFsmonitor(t, filepath.Join(deep, ".git", "config"))
		}, "cd a/b/c && git status --short"},
		{"python_module_from_current_folder", func(t *testing.T, ws string) {
			os.MkdirAll(filepath.Join(ws, "json"), 0o755)
			os.WriteFile(filepath.Join(ws, "json", "__init__.py"), []byte("import sys; print('AGENT-CODE-RAN', file=sys.stderr)\n"), 0o644)
		}, "echo '{}' | python3 -m json.tool"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := workspace(t)
			tt.setup(t, ws)
			if out, _ := runAs(t, c, ws, commands.Profile{}, tt.line); !strings.Contains(out, "AGENT-CODE-RAN") {
				t.Logf("control: today's sandbox did not run the planted code either:\n%s", out)
			}
			out, err := runAs(t, c, ws, bounded, tt.line)
			if strings.Contains(out, "AGENT-CODE-RAN") {
				t.Fatalf("the bounded run ran the agent's code:\n%s %v", out, err)
			}
		})
	}
}

// TestBoundedRunChangesNothing: whatever a bounded run executes, it cannot write the
// workspace (unless its pattern said +write) or reach the network, even when the agent's
// config grants the network; its HOME and /tmp are its own and gone afterwards.
func TestBoundedRunChangesNothing(t *testing.T) {
	c := mustShell(t, Options{Sandbox: SandboxBwrap, Bwrap: slirpHere(t), Network: true})
	connect := onlineLine
	write := "echo changed > kept.txt; mkdir made; rm -f gone.txt; ls"
	tests := []struct {
		name    string
		p       commands.Profile
		line    string
		want    string
		changed bool // the workspace changes
	}{
		{"person_approved_writes_online", commands.Profile{}, write + "; " + connect, "online", true},
		{"bounded_cannot_write", commands.Profile{Bounded: true}, write, "kept.txt", false},
		{"bounded_has_no_network", commands.Profile{Bounded: true}, connect, "offline", false},
		{"bounded_write_pattern_writes_offline", commands.Profile{Bounded: true, Write: true}, write + "; " + connect, "offline", true},
		{"bounded_keeping_network_online_but_cannot_write", commands.Profile{Bounded: true, Network: true}, write + "; " + connect, "online", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := workspace(t)
			os.WriteFile(filepath.Join(ws, "kept.txt"), []byte("original\n"), 0o644)
			os.WriteFile(filepath.Join(ws, "gone.txt"), []byte("x\n"), 0o644)
			out, err := runAs(t, c, ws, tt.p, tt.line)
			if err != nil || !strings.Contains(out, tt.want) {
				t.Fatalf("got %q, %v; want %q in it", out, err, tt.want)
			}
			b, _ := os.ReadFile(filepath.Join(ws, "kept.txt"))
			_, gone := os.Stat(filepath.Join(ws, "gone.txt"))
			changed := string(b) != "original\n" || gone != nil
			if changed != tt.changed {
				t.Errorf("workspace changed = %v (kept.txt %q, gone.txt removed: %v); want %v\n%s", changed, b, gone != nil, tt.changed, out)
			}
		})
	}
}

// TestUnconfinedRefusesWhatNeedsTheSandbox: with sandbox "none", a command a pattern
// approved, or one that the path rules would have to keep from a file, is refused with a
// reason, never run unconfined.
func TestUnconfinedRefusesWhatNeedsTheSandbox(t *testing.T) {
	c := mustShell(t, Options{Sandbox: SandboxNone})
	ws := workspace(t)
	os.MkdirAll(filepath.Join(ws, "secrets"), 0o755)
	os.WriteFile(filepath.Join(ws, "secrets", "key.txt"), []byte("KEY=hunter2\n"), 0o644)
	if _, err := runAs(t, c, ws, commands.Profile{Bounded: true}, "touch x"); err == nil || !strings.Contains(err.Error(), "approve it yourself") {
		t.Errorf("bounded run unconfined: %v; want a refusal naming the fix", err)
	}
	if _, err := os.Stat(filepath.Join(ws, "x")); err == nil {
		t.Error("the refused command ran")
	}
	rules, _ := permission.ParseRules("config", nil, []string{"read_file(secrets/*)"})
	out, err := runAs(t, c, ws, commands.Profile{Paths: permission.Denied(rules)}, "cat secrets/key.txt")
	if err == nil || !strings.Contains(err.Error(), "read_file(secrets/*)") || strings.Contains(out, "hunter2") {
		t.Errorf("unconfined run under a path deny: %q, %v; want a refusal naming the rule", out, err)
	}
}

// TestPathDenyHoldsForEveryProgram: a deny rule on a path keeps it from every program a
// shell line runs — cat, grep -r, python, a symlink or a hard link to it, listing its
// folder — under a person's approval and a pattern's alike; a write deny makes the path
// read-only to them, and what the rules do not name stays as it was.
func TestPathDenyHoldsForEveryProgram(t *testing.T) {
	bwrap := bwrapHere(t)
	c := mustShell(t, Options{Sandbox: SandboxBwrap, Bwrap: bwrap})
	rules, err := permission.ParseRules("config", nil, []string{"read_file(secrets/*)", "read_file(*.pem)", "write_file(locked/*)"})
	if err != nil {
		t.Fatal(err)
	}
	paths := permission.Denied(rules)
	setup := func(t *testing.T) string {
		ws := workspace(t)
		os.MkdirAll(filepath.Join(ws, "secrets", "deeper"), 0o755)
		os.MkdirAll(filepath.Join(ws, "src", "certs"), 0o755)
		os.MkdirAll(filepath.Join(ws, "locked"), 0o755)
		os.WriteFile(filepath.Join(ws, "secrets", "key.txt"), []byte("KEY=hunter2\n"), 0o644)
		os.WriteFile(filepath.Join(ws, "secrets", "deeper", "more.txt"), []byte("hunter2 again\n"), 0o644)
		os.WriteFile(filepath.Join(ws, "src", "certs", "server.pem"), []byte("PEM hunter2\n"), 0o644)
		os.WriteFile(filepath.Join(ws, "locked", "config"), []byte("original\n"), 0o644)
		os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("public notes\n"), 0o644)
		os.Symlink("secrets/key.txt", filepath.Join(ws, "link.txt"))
		os.Link(filepath.Join(ws, "secrets", "key.txt"), filepath.Join(ws, "hardlink.txt"))
		return ws
	}
	reads := []string{
		"cat secrets/key.txt",
		"grep -r hunter2 . ; echo grep-done",
		"cat link.txt",
		"cat hardlink.txt",
		"ls -R secrets",
		"cat src/certs/server.pem",
		"find . -name '*.pem' -exec cat {} +",
		`python3 -c "import pathlib; print([p.read_text() for p in pathlib.Path('.').rglob('*') if p.is_file()])"`,
	}
	for _, prof := range []commands.Profile{{Paths: paths}, {Paths: paths, Bounded: true}} {
		for _, line := range reads {
			t.Run(fmt.Sprintf("bounded=%v/%s", prof.Bounded, line), func(t *testing.T) {
				ws := setup(t)
				out, _ := runAs(t, c, ws, prof, line)
				if strings.Contains(out, "hunter2") || strings.Contains(out, "key.txt") && line == "ls -R secrets" {
					t.Fatalf("a denied path reached the program:\n%s", out)
				}
			})
		}
	}
	t.Run("allowed_paths_still_read_and_written", func(t *testing.T) {
		ws := setup(t)
		out, err := runAs(t, c, ws, commands.Profile{Paths: paths}, "cat notes.txt; echo new > notes2.txt; echo x > locked/config; cat locked/config")
		if err != nil || !strings.Contains(out, "public notes") || !strings.Contains(out, "original") {
			t.Fatalf("got %q, %v", out, err)
		}
		if b, _ := os.ReadFile(filepath.Join(ws, "locked", "config")); string(b) != "original\n" {
			t.Errorf("a write-denied file was written: %q", b)
		}
		if _, err := os.Stat(filepath.Join(ws, "notes2.txt")); err != nil {
			t.Errorf("an allowed write did not land: %v", err)
		}
		for _, p := range []string{"secrets/key.txt", "src/certs/server.pem"} {
			if b, _ := os.ReadFile(filepath.Join(ws, p)); !strings.Contains(string(b), "hunter2") {
				t.Errorf("%s changed on the host: %q", p, b)
			}
		}
	})
}

// TestWriteDenyHoldsWhateverTheProgramRenames: a write deny on a glob keeps every path it
// could match, not only the files there before the run: renaming the folder (or one above
// it) away and making a fresh one, creating a new matching file, or writing through a hard
// link all leave the host's files as they were, while the rest of the workspace stays
// writable.
func TestWriteDenyHoldsWhateverTheProgramRenames(t *testing.T) {
	bwrap := bwrapHere(t)
	c := mustShell(t, Options{Sandbox: SandboxBwrap, Bwrap: bwrap})
	rules, err := permission.ParseRules("config", nil, []string{"write_file(config/*.toml)", "write_file(deep/er/app.ini)"})
	if err != nil {
		t.Fatal(err)
	}
	paths := permission.Denied(rules)
	lines := map[string]string{
		"rename_the_folder":      "mv config moved; mkdir config; echo EVIL > config/app.toml",
		"rename_a_folder_above":  "mv deep gone; mkdir -p deep/er; echo EVIL > deep/er/app.ini",
		"rename_the_deeper":      "mv deep/er deep/gone; mkdir deep/er; echo EVIL > deep/er/app.ini",
		"remove_and_recreate":    "rm -rf config; mkdir config; echo EVIL > config/app.toml",
		"a_new_matching_file":    "echo EVIL > config/new.toml",
		"through_a_hard_link":    "echo EVIL > alias.toml",
		"a_new_hard_link_to_it":  "ln config/app.toml l2 && echo EVIL > l2",
		"a_symlink_in_its_place": "rm -rf config; ln -s other config; echo EVIL > config/app.toml",
		"rename_the_file_itself": "mv config/app.toml x; echo EVIL > config/app.toml",
	}
	for name, line := range lines {
		t.Run(name, func(t *testing.T) {
			ws := workspace(t)
			os.MkdirAll(filepath.Join(ws, "config"), 0o755)
			os.MkdirAll(filepath.Join(ws, "deep", "er"), 0o755)
			os.MkdirAll(filepath.Join(ws, "other"), 0o755)
			os.WriteFile(filepath.Join(ws, "config", "app.toml"), []byte("original\n"), 0o644)
			os.WriteFile(filepath.Join(ws, "deep", "er", "app.ini"), []byte("original\n"), 0o644)
			os.Link(filepath.Join(ws, "config", "app.toml"), filepath.Join(ws, "alias.toml"))
			out, _ := runAs(t, c, ws, commands.Profile{Paths: paths}, line+"; echo free > notes.txt")
			for _, p := range []string{"config/app.toml", "deep/er/app.ini", "alias.toml"} {
				if b, _ := os.ReadFile(filepath.Join(ws, p)); string(b) != "original\n" {
					t.Errorf("%s on the host is %q after %q (output %q)", p, b, line, out)
				}
			}
			if _, err := os.Stat(filepath.Join(ws, "config", "new.toml")); err == nil {
				t.Errorf("a new file matching a write deny was created")
			}
			if b, _ := os.ReadFile(filepath.Join(ws, "notes.txt")); string(b) != "free\n" {
				t.Errorf("a path no rule names was not written: %q", b)
			}
		})
	}
}

// A write-deny rule binds the folders leading to what it names onto themselves so they
// cannot be renamed; those binds never uncover what the sandbox keeps read-only inside
// them (a repository's hooks and config, the helpers' folder), whatever the rule names.
func TestWriteDenyRulesLeaveProtectedPathsReadOnly(t *testing.T) {
	c := mustShell(t, Options{Sandbox: SandboxBwrap, Bwrap: bwrapHere(t)})
	protectedFiles := []string{".git/hooks/pre-commit", ".git/config", "agents/h1/x.txt", "agents/h1/out/a.txt"}
	for _, rule := range []string{"", "write_file(.git/refs/heads/main)", "write_file(.git/*)", "write_file(agents/h1/out/*.txt)", "write_file(agents/h1/x.txt)"} {
		t.Run(rule, func(t *testing.T) {
			ws := workspace(t)
			for _, d := range []string{".git/hooks", ".git/refs/heads", "agents/h1/out"} {
				if err := os.MkdirAll(filepath.Join(ws, d), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			for _, f := range []string{".git/refs/heads/main", ".git/config"} {
				if err := os.WriteFile(filepath.Join(ws, f), []byte("kept\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			var prof commands.Profile
			if rule != "" {
				rules, err := permission.ParseRules("config", nil, []string{rule})
				if err != nil {
					t.Fatal(err)
				}
				prof.Paths = permission.Denied(rules)
			}
			line := "echo changed > free.txt"
			for _, f := range protectedFiles {
				line += "; echo EVIL >> " + f
			}
			out, _ := runAs(t, c, ws, prof, line)
			if b, err := os.ReadFile(filepath.Join(ws, "free.txt")); err != nil || string(b) != "changed\n" {
				t.Fatalf("a path no rule names was not writable (%v):\n%s", err, out)
			}
			for _, f := range protectedFiles {
				if b, _ := os.ReadFile(filepath.Join(ws, f)); strings.Contains(string(b), "EVIL") {
					t.Errorf("%s was written (%q), want it kept read-only:\n%s", f, b, out)
				}
			}
		})
	}
}

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
