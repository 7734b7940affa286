package shell

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/internal/testutil"
)

// gitIn runs the host's git in dir, as a person setting up a repository would.
func gitIn(t testing.TB, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.email=a@b", "-c", "user.name=a"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

// appendFile appends text to the file p.
func appendFile(t *testing.T, p, text string) {
	t.Helper()
	f, err := os.OpenFile(p, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
}

// planted is a driver of the agent's: it says it ran and writes planted.txt in the
// workspace, then passes its input through.
const planted = `"sh -c 'echo AGENT-CODE-RAN >&2; echo x > \"$AGENTD_WS\"/planted.txt 2>/dev/null; cat'"`

// drivenRepo makes, at ws/dir, a repository with a.txt committed, whose .gitattributes
// gives *.txt files the drivers attrs and whose config file cfg (relative to the
// repository) holds text.
func drivenRepo(t *testing.T, ws, dir, attrs, cfg, text string) string {
	t.Helper()
	proj := filepath.Join(ws, dir)
	gitRepo(t, proj)
	os.WriteFile(filepath.Join(proj, ".gitattributes"), []byte("*.txt "+attrs+"\n"), 0o644)
	os.WriteFile(filepath.Join(proj, "a.txt"), []byte("hello\n"), 0o644)
	gitIn(t, proj, "add", ".")
	gitIn(t, proj, "commit", "-qm", "a")
	appendFile(t, filepath.Join(proj, cfg), strings.ReplaceAll(text, "$AGENTD_WS", ws))
	return proj
}

// TestBoundedGitRunsNoDriverTheRepositoryNames: under a pattern, git runs none of the
// programs a repository's config names — the drivers its .gitattributes selects (clean and
// smudge filters, textconv, external diff and merge drivers), git archive's formats, its
// fsmonitor and hooks — wherever that config sits (a repository deeper than the sandbox
// protects, a file the config includes), in a read-only run or a +write one: the allow
// list refuses the repository, naming the key; and with every key allowed, the second
// wall alone keeps each from running and git works on the content as it is. A person's
// own approval (the zero Profile) runs them, which shows each case could fail.
func TestBoundedGitRunsNoDriverTheRepositoryNames(t *testing.T) {
	c := mustShell(t, Options{Sandbox: SandboxBwrap, Bwrap: bwrapHere(t)})
	tests := []struct {
		name       string
		dir, attrs string
		cfg, text  string
		write      bool
		line       string
		want       string // in the second wall's output: git did its work
		key        string // the first key the allow list refuses
	}{
		{"status_clean_filter", "proj", "filter=x", ".git/config", "[filter \"x\"]\n\tclean = " + planted + "\n",
			false, "cd proj && git status --short", " M a.txt", "filter.x.clean"},
		{"status_clean_filter_three_deep", "a/b/c/proj", "filter=x", ".git/config", "[filter \"x\"]\n\tclean = " + planted + "\n",
			false, "cd a/b/c/proj && git status --short", " M a.txt", "filter.x.clean"},
		{"status_clean_filter_odd_name", "proj", "filter=A.b=c", ".git/config", "[filter \"A.b=c\"]\n\tclean = " + planted + "\n",
			false, "cd proj && git status --short", " M a.txt", "filter.A.b=c.clean"},
		{"status_filter_process_included", "proj", "filter=x", ".git/config", "[include]\n\tpath = ../../drivers.cfg\n",
			false, "cd proj && git status --short", " M a.txt", "include.path"},
		{"add_clean_filter_write", "proj", "filter=x", ".git/config", "[filter \"x\"]\n\tclean = " + planted + "\n\trequired = true\n",
			true, "cd proj && echo hellO > a.txt && git add a.txt && git diff --cached --stat", "a.txt", "filter.x.clean"},
		{"checkout_smudge_filter_write", "proj", "filter=x", ".git/config", "[filter \"x\"]\n\tsmudge = " + planted + "\n",
			true, "cd proj && rm a.txt && git checkout -- a.txt && cat a.txt", "hello", "filter.x.smudge"},
		{"show_textconv", "proj", "diff=x", ".git/config", "[diff \"x\"]\n\ttextconv = " + planted + "\n",
			false, "cd proj && git show HEAD -- a.txt", "+hello", "diff.x.textconv"},
		{"diff_external_driver", "proj", "diff=x", ".git/config", "[diff \"x\"]\n\tcommand = " + planted + "\n",
			true, "cd proj && echo hellO > a.txt && git diff", "no external diff", "diff.x.command"},
		{"diff_external", "proj", "text", ".git/config", "[diff]\n\texternal = " + planted + "\n",
			true, "cd proj && echo hellO > a.txt && git diff", "no external diff", "diff.external"},
		{"status_fsmonitor", "proj", "text", ".git/config", "[core]\n\tfsmonitor = " + planted + "\n",
			false, "cd proj && git status --short", " M a.txt", "core.fsmonitor"},
		{"commit_hook_write", "proj", "text", ".git/config", "[user]\n\tname = a\n\temail = a@b\n[core]\n\thooksPath = ../hooks\n",
			true, "cd proj && git commit -qam b && git log --oneline | wc -l", "3", "core.hookspath"},
		{"archive_tar_command", "proj", "text", ".git/config", "[tar \"x\"]\n\tcommand = " + planted + "\n",
			false, "cd proj && git archive --format=x HEAD >/dev/null", "no tar.NAME.command", "tar.x.command"},
		{"merge_driver_write", "proj", "merge=x", ".git/config", "[user]\n\tname = a\n\temail = a@b\n[merge \"x\"]\n\tdriver = " + planted + "\n",
			true, "cd proj && git merge -q other 2>&1; git status --short", "UU a.txt", "merge.x.driver"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prof := commands.Profile{Bounded: true, Write: tt.write}
			var outs [3]string
			for i, p := range []commands.Profile{{}, prof, prof} {
				if i == 2 {
					allowEveryKey(t)
				}
				ws := workspace(t)
				proj := drivenRepo(t, ws, tt.dir, tt.attrs, tt.cfg, tt.text)
				os.WriteFile(filepath.Join(ws, "drivers.cfg"), []byte("[filter \"x\"]\n\tprocess = "+strings.ReplaceAll(planted, "$AGENTD_WS", ws)+"\n"), 0o644)
				if strings.HasPrefix(tt.name, "status") || strings.HasPrefix(tt.name, "commit") { // a change to see
					os.WriteFile(filepath.Join(proj, "a.txt"), []byte("hellO\n"), 0o644)
				}
				os.MkdirAll(filepath.Join(ws, "hooks"), 0o755)
				os.WriteFile(filepath.Join(ws, "hooks", "pre-commit"), []byte("#!/bin/sh\necho AGENT-CODE-RAN >&2; echo x > "+ws+"/planted.txt\n"), 0o755)
				if strings.HasPrefix(tt.name, "merge") {
					gitIn(t, proj, "checkout", "-qb", "other")
					os.WriteFile(filepath.Join(proj, "a.txt"), []byte("theirs\n"), 0o644)
					gitIn(t, proj, "commit", "-qam", "theirs")
					gitIn(t, proj, "checkout", "-q", "-")
					os.WriteFile(filepath.Join(proj, "a.txt"), []byte("ours\n"), 0o644)
					gitIn(t, proj, "commit", "-qam", "ours")
				}
				out, err := runAs(t, c, ws, p, tt.line)
				outs[i] = out
				_, wrote := os.Stat(filepath.Join(ws, "planted.txt"))
				switch {
				case i == 0 && !strings.Contains(out, "AGENT-CODE-RAN"):
					t.Logf("control: a person's run did not run the driver either:\n%s", out)
				case i > 0 && (strings.Contains(out, "AGENT-CODE-RAN") || wrote == nil):
					t.Fatalf("the bounded run ran the repository's driver (planted.txt written: %v, every key allowed: %v):\n%s %v", wrote == nil, i == 2, out, err)
				case i == 1 && !strings.Contains(out, "config (local) sets "+tt.key+", which a bounded git does not take"):
					t.Fatalf("the allow list did not refuse the repository for %s:\n%s %v", tt.key, out, err)
				case i == 2 && !strings.Contains(out, tt.want):
					t.Fatalf("with every key allowed, the bounded run's git did not do its work, want %q in:\n%s %v", tt.want, out, err)
				}
			}
			t.Logf("person:\n%s\nbounded:\n%s\nsecond wall:\n%s", outs[0], outs[1], outs[2])
		})
	}
}

// TestBoundedGitRefusals: a bounded git refuses, naming the fix, what it cannot keep from
// running a program: settings on its own command line (which outrank agentd's), a manual
// page (whose viewer the repository's man.viewer names first), a tool's subcommand, and a
// repository whose config names a trailer command or a submodule's update command. With
// every key allowed (everyKey: the second wall alone), a +write run still refuses the
// trailer command and a read-only run works; a plain `git diff` works (no external diff is
// set).
func TestBoundedGitRefusals(t *testing.T) {
	c := mustShell(t, Options{Sandbox: SandboxBwrap, Bwrap: bwrapHere(t)})
	ws := workspace(t)
	proj := drivenRepo(t, ws, "proj", "text", ".git/config", "[trailer \"x\"]\n\tcmd = "+planted+"\n"+
		"[man]\n\tviewer = x\n[man \"x\"]\n\tcmd = "+planted+"\n"+
		"[diff]\n\ttool = x\n[difftool \"x\"]\n\tcmd = "+planted+"\n")
	drivenRepo(t, ws, "sub", "text", ".git/config", "[submodule \"m\"]\n\tupdate = !"+planted+"\n")
	plain := drivenRepo(t, ws, "plain", "text", ".git/config", "")
	for _, p := range []string{proj, plain} {
		os.WriteFile(filepath.Join(p, "a.txt"), []byte("hellO\n"), 0o644)
	}
	tests := []struct {
		name     string
		write    bool
		line     string
		want     string
		everyKey bool
	}{
		{"command_line_setting", false, "cd proj && git -c core.fsmonitor=true status", "takes no -c", false},
		{"config_env_setting", false, "cd proj && git --config-env=core.pager=HOME status", "takes no --config-env", false},
		{"manual_page", false, "cd proj && git status --help", "shows no manual page", false},
		{"manual_page_global_option", false, "cd proj && git --help status", "shows no manual page", false},
		{"help_command", false, "cd proj && git help status", "shows no manual page", false},
		{"trailer_command", false, "cd proj && git status --short", "config (local) sets trailer.x.cmd, which a bounded git does not take", false},
		{"trailer_command_write_second_wall", true, "cd proj && git status --short", "refused: this repository's config sets trailer.x.cmd", true},
		{"trailer_command_read_only_second_wall", false, "cd proj && git status --short", " M a.txt", true},
		{"plain_diff", false, "cd plain && git diff", "+hellO", false},
		{"difftool", false, "cd proj && git difftool -y", "runs no difftool", false},
		{"web_browse", false, "cd proj && git web--browse http://x", "runs no difftool, mergetool, browser", false},
		{"submodule_update_command", true, "cd sub && git submodule update", "config (local) sets submodule.m.update", false},
		{"submodule_update_command_second_wall", true, "cd sub && git submodule update", "refused: this repository's config sets submodule.m.update", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.everyKey {
				allowEveryKey(t)
			}
			out, err := runAs(t, c, ws, commands.Profile{Bounded: true, Write: tt.write}, tt.line)
			if !strings.Contains(out, tt.want) || strings.Contains(out, "AGENT-CODE-RAN") {
				t.Fatalf("want %q in:\n%s %v", tt.want, out, err)
			}
		})
	}
}

// forkedRepo is drivenRepo with its config text, a branch other one commit (b.txt) ahead
// of the first and the current branch one commit (c.txt) apart from it.
func forkedRepo(t *testing.T, ws, dir, text string) string {
	t.Helper()
	proj := drivenRepo(t, ws, dir, "text", ".git/config", text)
	gitIn(t, proj, "checkout", "-qb", "other")
	os.WriteFile(filepath.Join(proj, "b.txt"), []byte("b\n"), 0o644)
	gitIn(t, proj, "add", "b.txt")
	gitIn(t, proj, "commit", "-qm", "b")
	gitIn(t, proj, "checkout", "-q", "-")
	os.WriteFile(filepath.Join(proj, "c.txt"), []byte("c\n"), 0o644)
	gitIn(t, proj, "add", "c.txt")
	gitIn(t, proj, "commit", "-qm", "c")
	return proj
}

// TestBoundedGitRunsNoAlias: no alias of the repository's runs in a bounded run, read-only
// or +write: not one the agent names (refused: it is none of git's own commands), and not
// one git starts itself — a merge strategy NAME is `git merge-NAME`, which
// cherry-pick --strategy, revert -s and rebase -s start — since every alias.NAME the config
// defines is set empty (git revert --strategy likewise), even with every key allowed (the
// allow list, which takes no alias, set aside). A person's own approval runs the alias,
// which shows each case could fail.
func TestBoundedGitRunsNoAlias(t *testing.T) {
	allowEveryKey(t)
	c := mustShell(t, Options{Sandbox: SandboxBwrap, Bwrap: bwrapHere(t)})
	tests := []struct {
		name string
		line string
		want string // in the bounded run's output
	}{
		{"cherry_pick_strategy", "cd proj && git cherry-pick --strategy=foo other", "runs only git's own commands"},
		{"rebase_strategy", "cd proj && git rebase -s foo other", "runs only git's own commands"},
		{"alias_named", "cd proj && git merge-foo", "runs only git's own commands"},
		{"alias_named_after_global_option", "cd proj && git --no-pager merge-foo", "runs only git's own commands"},
		{"builtin_still_runs", "cd proj && git log --oneline | wc -l", "3"},
	}
	for _, write := range []bool{false, true} {
		for _, tt := range tests {
			t.Run(map[bool]string{false: "read_only_", true: "write_"}[write]+tt.name, func(t *testing.T) {
				for i, p := range []commands.Profile{{}, {Bounded: true, Write: write}} {
					ws := workspace(t)
					forkedRepo(t, ws, "proj", "[user]\n\tname = a\n\temail = a@b\n"+
						"[alias]\n\tmerge-foo = \"!echo AGENT-CODE-RAN >&2; echo x > $AGENTD_WS/planted.txt; false\"\n")
					out, err := runAs(t, c, ws, p, tt.line)
					_, wrote := os.Stat(filepath.Join(ws, "planted.txt"))
					switch {
					case i == 0 && tt.name != "builtin_still_runs" && !strings.Contains(out, "AGENT-CODE-RAN"):
						t.Logf("control: a person's run did not run the alias either:\n%s", out)
					case i == 1 && (strings.Contains(out, "AGENT-CODE-RAN") || wrote == nil):
						t.Fatalf("the bounded run ran the repository's alias (planted.txt written: %v):\n%s %v", wrote == nil, out, err)
					case i == 1 && (write || !strings.Contains(tt.name, "strategy")) && !strings.Contains(out, tt.want):
						t.Fatalf("want %q in the bounded run's output:\n%s %v", tt.want, out, err)
					}
				}
			})
		}
	}
}

// TestBoundedGitRefusesAStoppedRebaseInEveryProfile: a bounded git rebase refuses a
// repository stopped in an interactive rebase (which the agent can write like any
// workspace file), whose todo list's exec line git rebase --continue would run, and names
// the fix; it does not run the line — in a +write run, and in a read-only one too; a copy
// of the repository in /tmp, whose config the run can change, is refused before that. A
// repository in no such state still rebases.
func TestBoundedGitRefusesAStoppedRebaseInEveryProfile(t *testing.T) {
	c := mustShell(t, Options{Sandbox: SandboxBwrap, Bwrap: bwrapHere(t)})
	ws := workspace(t)
	proj := drivenRepo(t, ws, "proj", "text", ".git/config", "[user]\n\tname = a\n\temail = a@b\n")
	forkedRepo(t, ws, "clean", "[user]\n\tname = a\n\temail = a@b\n")
	todo := "break\nexec echo AGENT-CODE-RAN >&2; echo x > " + ws + "/planted.txt\n"
	os.WriteFile(filepath.Join(ws, "todo"), []byte(todo), 0o644)
	cmd := exec.Command("git", "rebase", "-i", "--root")
	cmd.Dir = proj
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_SEQUENCE_EDITOR=cp "+filepath.Join(ws, "todo"))
	out, _ := cmd.CombinedOutput() // stops at break
	if _, err := os.Stat(filepath.Join(proj, ".git", "rebase-merge", "git-rebase-todo")); err != nil {
		t.Fatalf("no stopped rebase: %v\n%s", err, out)
	}
	stopped := []string{"stopped in a rebase", "git rebase --abort"}
	for _, tt := range []struct {
		write bool
		line  string
		want  []string
	}{
		{true, "cd proj && git rebase --continue", stopped},
		{true, "git -C proj --no-pager rebase --skip", stopped},
		{false, "cd proj && git rebase --continue", stopped},
		{false, "cp -r proj /tmp/p && cd /tmp/p && git rebase --continue", []string{"config this command cannot change"}},
	} {
		got, err := runAs(t, c, ws, commands.Profile{Bounded: true, Write: tt.write}, tt.line)
		_, wrote := os.Stat(filepath.Join(ws, "planted.txt"))
		if strings.Contains(got, "AGENT-CODE-RAN") || wrote == nil {
			t.Fatalf("%s (+write %v): the bounded run ran the exec line of the repository's rebase todo (planted.txt written: %v):\n%s %v", tt.line, tt.write, wrote == nil, got, err)
		}
		testutil.CheckContains(t, tt.line, got, tt.want, nil)
	}
	if out, err := runAs(t, c, ws, commands.Profile{Bounded: true, Write: true}, "cd clean && git rebase -q other && git log --oneline | wc -l"); err != nil || !strings.Contains(out, "4") {
		t.Fatalf("a bounded +write git rebase with no stopped state did not rebase:\n%s %v", out, err)
	}
}

// BenchmarkBoundedGitStatus runs `git status --short` in a repository of 1,000 committed
// files, one changed, as a person's approval runs it and as a pattern's does (through the
// bounded git, which asks the real one for the config's drivers first), in turn, and
// reports each per command and the bounded git's cost.
func BenchmarkBoundedGitStatus(b *testing.B) {
	c := mustShell(b, Options{Sandbox: SandboxBwrap, Bwrap: bwrapHere(b)})
	ws := workspace(b)
	gitRepo(b, ws)
	for i := range 1000 {
		dir := filepath.Join(ws, fmt.Sprintf("d%02d", i%50))
		os.MkdirAll(dir, 0o755)
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d.txt", i)), []byte("x\n"), 0o644)
	}
	gitIn(b, ws, "add", ".")
	gitIn(b, ws, "commit", "-qm", "files")
	os.WriteFile(filepath.Join(ws, "d00", "f0.txt"), []byte("y\n"), 0o644)
	profiles := []commands.Profile{{}, {Bounded: true}}
	spent := make([]time.Duration, len(profiles))
	for b.Loop() {
		for i, p := range profiles {
			start := time.Now()
			if out, err := runAs(b, c, ws, p, "git status --short"); err != nil || !strings.Contains(out, "M d00/f0.txt") {
				b.Fatal(err, out)
			}
			spent[i] += time.Since(start)
		}
	}
	b.ReportMetric(msPerOp(b, spent[0]), "person-ms/cmd")
	b.ReportMetric(msPerOp(b, spent[1]), "bounded-ms/cmd")
	b.ReportMetric(msPerOp(b, spent[1]-spent[0]), "bounded-git-ms/cmd")
}

// TestOnlineBoundedRunGetsEachFileItsOwn: a bounded run with the network (a schedule's
// --when-network check) is given the seccomp filter, the bounded git and its resolv.conf,
// each read by bwrap from its own descriptor: git is the bounded one and works, and
// resolv.conf names slirp4netns's DNS.
func TestOnlineBoundedRunGetsEachFileItsOwn(t *testing.T) {
	c := mustShell(t, Options{Sandbox: SandboxBwrap, Bwrap: slirpHere(t), Network: true})
	out, err := runAs(t, c, workspace(t), commands.Profile{Bounded: true, Network: true},
		"grep -c \"agentd's git\" /usr/bin/git; git --version; cat /etc/resolv.conf")
	if err != nil {
		t.Fatal(err, out)
	}
	testutil.CheckContains(t, "the run's output", out, []string{"git version ", "nameserver 10.0.2.3\n"}, nil)
	if n, _, _ := strings.Cut(out, "\n"); n == "0" {
		t.Errorf("the run's git is the real one, not the bounded one:\n%s", out)
	}
}
