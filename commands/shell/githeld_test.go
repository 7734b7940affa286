package shell

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/internal/testutil"
)

// heldRefusal is what a bounded git says of a repository whose config the run can change.
const heldRefusal = "a bounded git reads only a repository whose config this command cannot change"

// TestBoundedGitTakesNoRepositoryWhoseConfigTheRunCanChange: the lines that wrote a
// clean filter into a repository's config from the other side of a pipe, after git
// status's check and before the real git read it (git log prints the config line, tee
// appends it, each program one a wildcard pattern approves), run no filter: a copy of the
// repository the line makes in the workspace (+write) or in /tmp (+write and read-only)
// is refused, naming the fix, whichever side of the pipe wins. A repository the line
// makes itself is refused too, and so is a helper's (its own runs write it meanwhile);
// the workspace's own still works.
func TestBoundedGitTakesNoRepositoryWhoseConfigTheRunCanChange(t *testing.T) {
	c := mustShell(t, Options{Sandbox: SandboxBwrap, Bwrap: bwrapHere(t)})
	ws := workspace(t)
	proj := drivenRepo(t, ws, "proj", "filter=x", ".git/config", "")
	os.WriteFile(filepath.Join(proj, "a.txt"), []byte("hellO\n"), 0o644)
	drivenRepo(t, ws, "agents/helper", "text", ".git/config", "")
	if os.Getuid() == 0 { // a helper's own runs give its workspace to the sandbox's uid
		filepath.Walk(filepath.Join(ws, "agents"), func(p string, _ os.FileInfo, _ error) error {
			return os.Lchown(p, DefaultUID, DefaultGID)
		})
	}
	filter := `git log -1 '--format=tformat:[filter "x"] clean = sh -c "echo AGENT-CODE-RAN >&2; echo x > ` + ws + `/planted.txt; cat"'`
	tests := []struct {
		name  string
		write bool
		line  string // {try}: the try
		want  string
	}{
		{"workspace_copy_write", true, "cp -r proj n{try} && cd n{try} && " + filter + " | tee -a .git/config | git status --short", heldRefusal},
		{"tmp_copy_write", true, "rm -rf /tmp/p && cp -r proj /tmp/p && cd /tmp/p && " + filter + " | tee -a .git/config | git status --short", heldRefusal},
		{"tmp_copy_read_only", false, "cp -r proj /tmp/p && cd /tmp/p && " + filter + " | tee -a .git/config | git status --short", heldRefusal},
		{"repository_made_by_the_line_write", true, "git init -q m{try} && cd m{try} && git status --short", heldRefusal},
		{"helpers_repository_read_only", false, "cd agents/helper && git status --short", heldRefusal},
		{"workspace_repository_write", true, "cd proj && " + filter + " | tee -a .git/config | git status --short", " M a.txt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			os.Remove(filepath.Join(ws, "planted.txt"))
			for try := range 3 { // the attacker's race was won within a few tries
				line := strings.ReplaceAll(tt.line, "{try}", strconv.Itoa(try))
				out, err := runAs(t, c, ws, commands.Profile{Bounded: true, Write: tt.write}, line)
				_, wrote := os.Stat(filepath.Join(ws, "planted.txt"))
				if strings.Contains(out, "AGENT-CODE-RAN") || wrote == nil {
					t.Fatalf("try %d: the bounded git ran the filter written into the config after its check (planted.txt written: %v):\n%s %v", try, wrote == nil, out, err)
				}
				if !strings.Contains(out, tt.want) {
					t.Fatalf("try %d: want %q in:\n%s %v", try, tt.want, out, err)
				}
				if tt.want == heldRefusal && !strings.Contains(out, "Run git in a repository that was in the workspace before this command began") {
					t.Fatalf("try %d: the refusal names no fix:\n%s", try, out)
				}
			}
		})
	}
}

// changingGit stands in for the real git in c's bounded runs: a copy of it that, called
// for subcommand status (the command the line gave, after every check of the bounded
// git), first runs change — the other side of a pipe at the worst moment.
func changingGit(t *testing.T, c commands.Command, change string) {
	t.Helper()
	g := findGit()
	if g.real == "" {
		t.Skip("git is not installed")
	}
	dir := t.TempDir()
	os.Chmod(dir, 0o755) // the sandbox's uid runs it
	bin, err := os.ReadFile(g.real)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "git"), bin, 0o755); err != nil {
		t.Fatal(err)
	}
	fake := filepath.Join(dir, "changing-git")
	body := "#!/bin/sh\ncase $1 in status) " + change + " ;; esac\nexec " + filepath.Join(dir, "git") + ` "$@"` + "\n"
	if err := os.WriteFile(fake, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	box := c.(*executeShell).box
	box.o.ReadOnlyPaths = append(box.o.ReadOnlyPaths, dir)
	box.git.Store(&boundGit{real: fake, over: g.over})
}

// TestBoundedGitReadsOnlyTheConfigItChecked: whatever changes between the bounded git's
// checks and the real git's read of the config — a clean filter appended to the config
// (or to another name of it, a hard link), a repository (with a filter in its config)
// copied in nearer than the one checked, or into a folder that was none — git runs no
// filter: the workspace's repository is read
// as checked (its config is read-only and git is told which repository it is), and a
// repository whose config the run could change is refused before. A stand-in for the
// real git makes each change right before git itself starts, so no race needs winning;
// the bounded git before this held none of these but the first.
func TestBoundedGitReadsOnlyTheConfigItChecked(t *testing.T) {
	ws := workspace(t)
	proj := drivenRepo(t, ws, "proj", "filter=x", ".git/config", "")
	os.WriteFile(filepath.Join(proj, "a.txt"), []byte("hellO\n"), 0o644)
	// evil: a repository's .git for a folder holding a.txt, whose config names a clean filter.
	src := filepath.Join(t.TempDir(), "src")
	drivenRepo(t, filepath.Dir(src), "src", "filter=x", ".git/config", "[filter \"x\"]\n\tclean = "+strings.ReplaceAll(planted, "$AGENTD_WS", ws)+"\n")
	if out, err := exec.Command("cp", "-r", filepath.Join(src, ".git"), filepath.Join(ws, "evil")).CombinedOutput(); err != nil {
		t.Fatal(err, string(out))
	}
	for _, dir := range []string{filepath.Join(proj, "d"), filepath.Join(ws, "plain")} {
		os.MkdirAll(dir, 0o755)
		os.WriteFile(filepath.Join(dir, ".gitattributes"), []byte("*.txt filter=x\n"), 0o644)
		os.WriteFile(filepath.Join(dir, "a.txt"), []byte("hellO\n"), 0o644)
	}
	linked := drivenRepo(t, ws, "linked", "filter=x", ".git/config", "")
	os.WriteFile(filepath.Join(linked, "a.txt"), []byte("hellO\n"), 0o644)
	if err := os.Link(filepath.Join(linked, ".git", "config"), filepath.Join(ws, "config-too")); err != nil {
		t.Fatal(err)
	}
	addFilter := `printf '[filter "x"]\n\tclean = sh -c "echo AGENT-CODE-RAN >&2; echo x > ` + ws + `/planted.txt; cat"\n' >> .git/config 2>/dev/null`
	tests := []struct {
		name   string
		write  bool
		change string
		line   string
		want   string
	}{
		{"filter_added_to_the_workspace_repository", true, addFilter, "cd proj && git status --short", " M a.txt"},
		{"filter_added_to_a_copy_in_the_workspace", true, addFilter, "cp -r proj n && cd n && git status --short", heldRefusal},
		{"filter_added_to_a_copy_in_tmp", false, addFilter, "cp -r proj /tmp/p && cd /tmp/p && git status --short", heldRefusal},
		{"filter_added_through_another_name_of_the_config", true, strings.ReplaceAll(addFilter, ".git/config", ws+"/config-too"), "cd linked && git status --short", heldRefusal},
		{"repository_copied_in_nearer", true, "cp -r " + ws + "/evil .git", "cd proj/d && git status --short", " M ../a.txt"},
		{"repository_copied_in_where_there_was_none", true, "cp -r " + ws + "/evil .git", "cd plain && git status --short", "not a git repository"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			os.Remove(filepath.Join(ws, "planted.txt"))
			c := mustShell(t, Options{Sandbox: SandboxBwrap, Bwrap: bwrapHere(t)})
			changingGit(t, c, tt.change)
			out, err := runAs(t, c, ws, commands.Profile{Bounded: true, Write: tt.write}, tt.line)
			_, wrote := os.Stat(filepath.Join(ws, "planted.txt"))
			if strings.Contains(out, "AGENT-CODE-RAN") || wrote == nil {
				t.Fatalf("git ran the filter of a config that changed after the bounded git's check (planted.txt written: %v):\n%s %v", wrote == nil, out, err)
			}
			if !strings.Contains(out, tt.want) {
				t.Fatalf("want %q in:\n%s %v", tt.want, out, err)
			}
		})
	}
}

// TestBoundedGitTakesTheWorkspacesRepositories: what a bounded git did in the workspace's
// repositories, their config held read-only, it still does in a +write run: git status
// at the top and from a folder inside, git commit, and git diff --no-index outside any
// repository; and in a read-only run, a bare repository named with --git-dir.
func TestBoundedGitTakesTheWorkspacesRepositories(t *testing.T) {
	c := mustShell(t, Options{Sandbox: SandboxBwrap, Bwrap: bwrapHere(t)})
	ws := workspace(t)
	proj := drivenRepo(t, ws, "proj", "text", ".git/config", "[user]\n\tname = a\n\temail = a@b\n")
	os.WriteFile(filepath.Join(proj, "a.txt"), []byte("hellO\n"), 0o644)
	os.MkdirAll(filepath.Join(proj, "d"), 0o755)
	gitIn(t, ws, "clone", "-q", "--bare", proj, "bare.git")
	tests := []struct {
		name, line string
		want       []string
		readOnly   bool
	}{
		{"status", "cd proj && git status --short", []string{" M a.txt"}, false},
		{"status_from_a_folder_inside", "cd proj/d && git status --short", []string{" M ../a.txt"}, false},
		{"commit", "cd proj && git commit -qm b a.txt && git log --oneline | wc -l", []string{"3"}, false},
		{"diff_outside_any_repository", "echo x > /tmp/a && echo y > /tmp/b; git diff --no-index /tmp/a /tmp/b", []string{"+y"}, false},
		{"bare_repository_named_read_only", "git --git-dir=bare.git log --oneline | wc -l", []string{"2"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := runAs(t, c, ws, commands.Profile{Bounded: true, Write: !tt.readOnly}, tt.line)
			checkResult(t, out, ws, tt.want, []string{"agentd: refused", "fatal"})
			t.Log(out, err)
		})
	}
}

// plantableRebase makes the repository proj (two commits) and a rebase's state, stopped at
// a break with an exec line writing planted.txt as its todo, kept aside as a tar blob in
// the repository's objects (rm/...): what a +write run can unpack where git looks. It
// returns the blob's name.
func plantableRebase(t *testing.T, proj string) string {
	t.Helper()
	gitRepo(t, proj)
	for _, f := range []string{"a.txt", "b.txt"} {
		os.WriteFile(filepath.Join(proj, f), []byte(f+"\n"), 0o644)
		gitIn(t, proj, "add", f)
		gitIn(t, proj, "-c", "user.email=a@b", "-c", "user.name=a", "commit", "-qm", f)
	}
	cmd := exec.Command("git", "-c", "user.email=a@b", "-c", "user.name=a", "rebase", "-q", "-i", "HEAD~1")
	cmd.Dir = proj
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1", `GIT_SEQUENCE_EDITOR=sed -i 1ibreak`)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("rebase -i: %v\n%s", err, out)
	}
	aside := filepath.Join(t.TempDir(), "rm")
	if out, err := exec.Command("cp", "-a", filepath.Join(proj, ".git", "rebase-merge"), aside).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	os.WriteFile(filepath.Join(aside, "git-rebase-todo"), []byte("exec sh -c 'echo AGENT-CODE-RAN >&2; echo x > planted.txt'\n"), 0o644)
	gitIn(t, proj, "rebase", "--abort")
	tarball := filepath.Join(t.TempDir(), "rm.tar")
	if out, err := exec.Command("tar", "-C", filepath.Dir(aside), "-cf", tarball, "rm").CombinedOutput(); err != nil {
		t.Fatalf("tar: %v %s", err, out)
	}
	hash := exec.Command("git", "hash-object", "-w", tarball)
	hash.Dir = proj
	sha, err := hash.Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(sha))
}

// ranPlanted fails the test when the planted todo's exec line ran.
func ranPlanted(t *testing.T, proj, line, out string, err error) {
	t.Helper()
	_, wrote := os.Stat(filepath.Join(proj, "planted.txt"))
	if wrote == nil || strings.Contains(out, "AGENT-CODE-RAN") {
		t.Fatalf("%s: a bounded git ran the exec line of a rebase's todo the run wrote (planted.txt written: %v):\n%s %v", line, wrote == nil, out, err)
	}
}

// TestBoundedGitRefusesToResumeASequencerWhoseStateTheRunCanWrite: a +write run can leave
// a dangling link where git keeps a rebase's state (.git/rebase-merge -> /tmp/rm) and
// fill it from the other side of a pipe while git rebase --continue starts; a bounded git
// refuses --continue outright, before it reads any state, and names the fix, so the todo's
// exec line never runs however the two sides interleave.
func TestBoundedGitRefusesToResumeASequencerWhoseStateTheRunCanWrite(t *testing.T) {
	c := mustShell(t, Options{Sandbox: SandboxBwrap, Bwrap: bwrapHere(t)})
	ws := workspace(t)
	proj := filepath.Join(ws, "proj")
	sha := plantableRebase(t, proj)
	if err := os.Symlink("/tmp/rm", filepath.Join(proj, ".git", "rebase-merge")); err != nil {
		t.Fatal(err)
	}
	line := "cd proj && git cat-file blob " + sha + " | tar -x -C /tmp | git rebase --continue"
	for i := 0; i < 5; i++ {
		out, err := runAs(t, c, ws, commands.Profile{Bounded: true, Write: true}, line)
		ranPlanted(t, proj, line, out, err)
		testutil.CheckContains(t, line, out, []string{"does not resume", "Finish or abort the rebase", "outside the agent"}, nil)
	}
}

// TestBoundedGitRefusesEveryFormThatResumesASequencer: each form that goes on with, edits,
// shows or ends a stopped rebase, am, cherry-pick or revert is refused in a repository in
// no such state too (the refusal reads no state), read-only and +write alike; the forms
// that start one, and rebase's -r (--rebase-merges, am's is --resolved), are not.
func TestBoundedGitRefusesEveryFormThatResumesASequencer(t *testing.T) {
	c := mustShell(t, Options{Sandbox: SandboxBwrap, Bwrap: bwrapHere(t)})
	ws := workspace(t)
	gitRepo(t, filepath.Join(ws, "proj"))
	refused := []string{"does not resume", "outside the agent"}
	for _, write := range []bool{false, true} {
		for _, tt := range []struct {
			line string
			want []string
			not  []string
		}{
			{"git -C proj rebase --continue", refused, nil},
			{"git -C proj rebase --skip", refused, nil},
			{"git -C proj rebase --edit-todo", refused, nil},
			{"git -C proj rebase --abort", refused, nil},
			{"git -C proj rebase --quit", refused, nil},
			{"git -C proj rebase --show-current-patch", refused, nil},
			{"git -C proj am", refused, nil},
			{"git -C proj am --continue", refused, nil},
			{"git -C proj am -r", refused, nil},
			{"git -C proj am --resolved", refused, nil},
			{"git -C proj cherry-pick --continue", refused, nil},
			{"git -C proj cherry-pick --abort", refused, nil},
			{"git -C proj revert --skip", refused, nil},
			{"git -C proj revert --quit", refused, nil},
			{"git -C proj rebase -r HEAD", nil, refused},
			{"git -C proj cherry-pick HEAD", nil, refused},
		} {
			got, _ := runAs(t, c, ws, commands.Profile{Bounded: true, Write: write}, tt.line)
			testutil.CheckContains(t, tt.line, got, tt.want, tt.not)
		}
	}
}

// TestBoundedGitTakesAnyEntryAtASequencerPathAsStopped: a link at a rebase's state path,
// dangling or not, is a stopped rebase to a bounded git (git rev-parse --path-format=absolute
// would name the link's target, not there yet), which refuses a fresh rebase
// there; and state unpacked there after its check is git's own refusal: a rebase or a
// cherry-pick does not start while the state is there, and runs none of its exec lines.
func TestBoundedGitTakesAnyEntryAtASequencerPathAsStopped(t *testing.T) {
	c := mustShell(t, Options{Sandbox: SandboxBwrap, Bwrap: bwrapHere(t)})
	ws := workspace(t)
	proj := filepath.Join(ws, "proj")
	sha := plantableRebase(t, proj)
	gitIn(t, proj, "branch", "other", "HEAD~1")
	link := filepath.Join(proj, ".git", "rebase-merge")
	if err := os.Symlink("/tmp/rm", link); err != nil {
		t.Fatal(err)
	}
	line := "cd proj && git cat-file blob " + sha + " | tar -x -C /tmp | git rebase other"
	out, err := runAs(t, c, ws, commands.Profile{Bounded: true, Write: true}, line)
	ranPlanted(t, proj, line, out, err)
	testutil.CheckContains(t, line, out, []string{"stopped in a rebase", "git rebase --abort"}, nil)
	os.Remove(link)

	// No entry when the wrapper looks: the other side unpacks the state into .git itself.
	// Whichever side wins, the exec line does not run.
	for _, start := range []string{"rebase other", "cherry-pick other", "rebase -i other"} {
		line := "cd proj && git cat-file blob " + sha + " | tar -x -C .git --transform s/^rm/rebase-merge/ | git " + start
		out, err := runAs(t, c, ws, commands.Profile{Bounded: true, Write: true}, line)
		ranPlanted(t, proj, line, out, err)
		os.RemoveAll(link)
	}
	// And git's own refusal, on which that rests: planted before a fresh start, unbounded.
	unpack := exec.Command("sh", "-c", "git -c safe.directory='*' cat-file blob "+sha+" | tar -x -C .git --transform s/^rm/rebase-merge/")
	unpack.Dir = proj
	unpack.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	if out, err := unpack.CombinedOutput(); err != nil {
		t.Fatalf("unpack: %v %s", err, out)
	}
	for _, start := range [][]string{{"rebase", "other"}, {"rebase", "-i", "other"}} {
		cmd := exec.Command("git", append([]string{"-c", "safe.directory=*"}, start...)...)
		cmd.Dir = proj
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1", "GIT_SEQUENCE_EDITOR=true")
		out, err := cmd.CombinedOutput()
		ranPlanted(t, proj, strings.Join(start, " "), string(out), err)
		if err == nil || !strings.Contains(string(out), "rebase-merge directory") {
			t.Fatalf("git %v with a rebase's state planted: want git's refusal naming the rebase-merge directory, got %v:\n%s", start, err, out)
		}
	}
}

// TestWritesWaitWhileABoundedRunReadsTheirRepositories: while a bounded run (whose git
// reads the repositories' config, hooks and sequencer state) runs in a helper's folder,
// the parent's write_file there, made by the daemon outside the sandbox, is not made: it
// waits, and is refused naming why when its time runs out first. Once the run ends, the
// same write is made.
func TestWritesWaitWhileABoundedRunReadsTheirRepositories(t *testing.T) {
	c := mustShell(t, Options{Sandbox: SandboxBwrap, Bwrap: bwrapHere(t)})
	ws := workspace(t)
	helper := filepath.Join(ws, commands.HelpersFolder, "h")
	gitRepo(t, filepath.Join(helper, "repo"))
	ran := make(chan error, 1)
	go func() {
		_, err := runAs(t, c, helper, commands.Profile{Bounded: true, Write: true},
			"git -C repo status --short && touch started && while [ ! -e release ]; do sleep 0.05; done")
		ran <- err
	}()
	if !testutil.Wait(time.Minute, func() bool { _, err := os.Stat(filepath.Join(helper, "started")); return err == nil }) {
		t.Fatal("the bounded run did not start")
	}
	write, _ := commands.Lookup("write_file")
	args := []byte(`{"path": "agents/h/notes.txt", "contents": "x"}`)
	_, err := commands.Run(context.Background(), write, commands.Env{Workspace: ws}, args, commands.Limits{Timeout: 300 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "git is running in this workspace") {
		t.Errorf("the parent's write while the helper's bounded run ran: %v; want it refused for the run", err)
	}
	if _, serr := os.Stat(filepath.Join(helper, "notes.txt")); serr == nil {
		t.Error("the parent's write was made while the helper's bounded run ran")
	}
	os.WriteFile(filepath.Join(helper, "release"), nil, 0o644)
	if err := <-ran; err != nil {
		t.Fatalf("bounded run: %v", err)
	}
	if _, err := commands.Run(context.Background(), write, commands.Env{Workspace: ws}, args, commands.Limits{Timeout: time.Minute}); err != nil {
		t.Errorf("the write once the run ended: %v", err)
	}
}
