package shell

import (
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/agentd/agentd/commands"
)

// allowEveryKey has the bounded git take every key of a repository's config for the rest
// of t, so that a test sees what the walls behind the allow list hold alone.
func allowEveryKey(t *testing.T) {
	saved := boundedGitKeys
	boundedGitKeys = []string{"*"}
	t.Cleanup(func() { boundedGitKeys = saved })
}

// TestBoundedGitTakesOnlyKeysThatNameNoProgram: a bounded git refuses a repository whose
// config (local or worktree) sets a key outside the allow list, naming the key and the
// fix, before git runs — a key this git does not know yet (a newer git's
// gc.recentObjectsHook), a trailer command git interpret-trailers runs in a read-only run,
// an alias, a driver in the worktree config — and takes a repository set up as git init
// and git remote add leave it (set up before the run: one the run makes, whose config it
// can change, is refused); a remote's ext:: address it takes is kept off by
// GIT_ALLOW_PROTOCOL.
func TestBoundedGitTakesOnlyKeysThatNameNoProgram(t *testing.T) {
	c := mustShell(t, Options{Sandbox: SandboxBwrap, Bwrap: bwrapHere(t)})
	tests := []struct {
		name           string
		cfg, text      string // a file of proj's .git and what is appended to it
		write          bool
		line           string
		want           string
		refusedAtScope string // "": the repository is taken
	}{
		{"key_newer_than_this_git", "config", "[gc]\n\trecentObjectsHook = " + planted + "\n",
			false, "cd proj && git status --short", "sets gc.recentobjectshook, which", "local"},
		{"trailer_command_read_only", "config", "[trailer \"x\"]\n\tcmd = " + planted + "\n",
			false, "cd proj && git interpret-trailers --trailer x=1 </dev/null", "sets trailer.x.cmd, which", "local"},
		{"alias", "config", "[alias]\n\tst = status\n",
			false, "cd proj && git status --short", "sets alias.st, which", "local"},
		{"driver_in_worktree_config", "config.worktree", "[filter \"x\"]\n\tclean = " + planted + "\n",
			false, "cd proj && git status --short", "sets filter.x.clean, which", "worktree"},
		{"repository_git_init_and_remote_add", "config", "[remote \"o\"]\n\turl = https://example.invalid/x\n\tfetch = +refs/heads/*:refs/remotes/o/*\n",
			false, "cd proj && git status --short && echo TAKEN", "TAKEN", ""},
		{"remote_ext_address", "config", "[remote \"ext\"]\n\turl = \"ext::sh -c touch% ../planted.txt\"\n",
			false, "cd proj && git fetch ext", "transport 'ext' not allowed", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := workspace(t)
			proj := drivenRepo(t, ws, "proj", "filter=x", ".git/config",
				"[core]\n\trepositoryformatversion = 1\n[extensions]\n\tworktreeConfig = true\n")
			appendFile(t, filepath.Join(proj, ".git", tt.cfg), strings.ReplaceAll(tt.text, "$AGENTD_WS", ws))
			os.WriteFile(filepath.Join(proj, "a.txt"), []byte("hellO\n"), 0o644)
			out, err := runAs(t, c, ws, commands.Profile{Bounded: true, Write: tt.write}, tt.line)
			_, wrote := os.Stat(filepath.Join(ws, "planted.txt"))
			if strings.Contains(out, "AGENT-CODE-RAN") || wrote == nil {
				t.Fatalf("the bounded run ran a program the repository's config names (planted.txt written: %v):\n%s %v", wrote == nil, out, err)
			}
			want := []string{tt.want}
			if tt.refusedAtScope != "" {
				want = append(want, "agentd: refused: this repository's config ("+tt.refusedAtScope+")", "git config --unset-all")
			}
			checkResult(t, out, ws, want, nil)
			if refused := strings.Contains(out, "does not take"); refused != (tt.refusedAtScope != "") {
				t.Errorf("refused %v, want %v:\n%s", refused, tt.refusedAtScope != "", out)
			}
		})
	}
}

// programKeys are the forms of a config key that can name a program to run (or a file of
// more config, or of commands): a key git lists that has one of them must stay out of
// boundedGitKeys.
var programKeys = []string{"*cmd", "*command", "*program", "*path", "*helper", "*hook*", "*tool*",
	"*driver", "*textconv", "*browser", "*tunnel", "*editor", "*pager", "pager.*", "*askpass",
	"*proxy", "*fsmonitor", "alias.*", "*.clean", "*.smudge", "*.process", "*pack", "*.vcs",
	"*.update", "*external", "*viewer", "*filter", "include.*", "includeif.*", "*file", "*dir",
	"*exec*", "*sendmail*", "*.shell", "*insteadof"}

// knownKeys are the config keys this git documents (git help --config), lowercase as git
// config --list gives them: NAME in <NAME> becomes x, and a section whose keys are any
// (credential.<url>.*) gets one of each form programKeys names.
func knownKeys(t *testing.T) []string {
	t.Helper()
	out, err := exec.Command("git", "help", "--config").Output()
	if err != nil {
		t.Skipf("git help --config: %v", err)
	}
	placeholder := regexp.MustCompile(`<[^>]*>`)
	var keys []string
	for _, k := range strings.Fields(string(out)) {
		k = strings.ToLower(placeholder.ReplaceAllString(k, "x"))
		if base, ok := strings.CutSuffix(k, ".*"); ok {
			for _, form := range []string{"x", "cmd", "command", "program", "helper", "path", "hook"} {
				keys = append(keys, base+"."+form)
			}
			continue
		}
		keys = append(keys, k)
	}
	return keys
}

// allowedBy is which of keys the script's allowed function takes, given patterns: sh's
// case matches them, as in the bounded git.
func allowedBy(t *testing.T, patterns, keys []string) []string {
	t.Helper()
	cmd := exec.Command("sh", "-c", allowedKeys(patterns)+`while IFS= read -r k; do if allowed "$k"; then echo "$k"; fi; done`)
	cmd.Stdin = strings.NewReader(strings.Join(keys, "\n") + "\n")
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(out))
}

// TestBoundedGitAllowsNoKeyThatCanNameAProgram: of every key this git documents (a newer
// git's included, whenever the test runs with it), the allow list takes none that has a
// form that can name a program — so a git that adds one cannot have the bounded git take
// it. The check could fail: the allow list with core.pager added takes core.pager; and the
// forms catch the program keys a bounded git is known to face.
func TestBoundedGitAllowsNoKeyThatCanNameAProgram(t *testing.T) {
	keys := knownKeys(t)
	var prog []string
	for _, k := range keys {
		for _, p := range programKeys {
			if ok, _ := path.Match(p, k); ok {
				prog = append(prog, k)
				break
			}
		}
	}
	for _, k := range []string{"core.fsmonitor", "core.sshcommand", "core.hookspath", "filter.x.clean",
		"diff.x.textconv", "merge.x.driver", "remote.x.uploadpack", "credential.helper", "alias.x",
		"pager.x", "sequence.editor", "gpg.program", "submodule.x.update", "includeif.x.path", "tar.x.command"} {
		if !slices.Contains(keys, k) {
			t.Logf("this git does not document %s", k)
		} else if !slices.Contains(prog, k) {
			t.Errorf("the forms of programKeys miss %s, a key that names a program", k)
		}
	}
	t.Logf("%d keys documented, %d of a form that can name a program", len(keys), len(prog))
	if got := allowedBy(t, boundedGitKeys, prog); len(got) > 0 {
		t.Errorf("the bounded git's allow list takes keys that can name a program: %v", got)
	}
	if got := allowedBy(t, append(slices.Clone(boundedGitKeys), "core.pager"), prog); !slices.Contains(got, "core.pager") {
		t.Errorf("the check is blind: an allow list with core.pager takes %v", got)
	}
	for _, p := range boundedGitKeys {
		if !regexp.MustCompile(`^[a-z]+(\.[a-z*]+)+$`).MatchString(p) {
			t.Errorf("allow-list entry %q: want lowercase words and * joined by dots, as sh's case reads them plainly", p)
		}
	}
}
