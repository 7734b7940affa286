package shell

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/internal/testutil"
)

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
