package effect

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/commands/shell"
	"github.com/agentd/agentd/internal/testutil"
)

// sandboxed returns execute_shell under bwrap, skipping where no sandbox works (the
// preview runs only in one).
func sandboxed(t testing.TB, o shell.Options) commands.Command {
	t.Helper()
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		t.Skip("bwrap is not installed (Debian package bubblewrap): effect previews not tested")
	}
	o.Sandbox, o.Bwrap = shell.SandboxBwrap, bwrap
	if _, err := shell.CheckSandbox(o); err != nil {
		if os.Getenv("AGENTD_REQUIRE_SANDBOX") == "1" {
			t.Fatalf("AGENTD_REQUIRE_SANDBOX=1 but %v", err)
		}
		t.Skipf("effect previews not tested: %v", err)
	}
	c, err := shell.NewExecuteShell(o)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// fixture is a workspace with a few files, a preview store beside it, and the shell.
type fixture struct {
	ws, dir string
	p       *Previews
	sh      commands.Command
	room    int64 // the disk its previews may take (0: the default)
}

func newFixture(t testing.TB, o shell.Options) *fixture {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{ws: filepath.Join(root, "work", "a-1"), dir: filepath.Join(root, "previews"), sh: sandboxed(t, o)}
	write(t, f.ws, map[string]string{"notes.txt": "one\ntwo\n", "old.txt": "gone soon\n", "keep/deep.txt": "deep\n"})
	f.p = New(Options{Dir: f.dir})
	t.Cleanup(func() { f.p.Close() })
	return f
}

func write(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func (f *fixture) run(t testing.TB, line string) (*api.Effect, string) {
	t.Helper()
	args, _ := json.Marshal(map[string]string{"command_line": line})
	return f.p.Run(context.Background(), f.sh, commands.Env{Workspace: f.ws, AgentID: "a-1"}, args, commands.Limits{Timeout: time.Minute}, f.room)
}

// tree lists every path under dir with its content (a symlink as its target), one a line.
func tree(t testing.TB, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case d.Type()&os.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			fmt.Fprintf(&b, "%s -> %s\n", rel, target)
		case d.Type().IsRegular():
			body, _ := os.ReadFile(p)
			fmt.Fprintf(&b, "%s = %q\n", rel, body)
		default:
			fmt.Fprintf(&b, "%s/\n", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestPreviewShowsOutputAndChangeAndLeavesWorkspaceAsItWas(t *testing.T) {
	testutil.AsRootAndNot(t, func(t *testing.T) {
		f := newFixture(t, shell.Options{})
		before := tree(t, f.ws)
		eff, diff := f.run(t, "echo three >> notes.txt; echo fresh > new.txt; rm old.txt; echo done")
		if !eff.Appliable() {
			t.Fatalf("no appliable effect: %+v", eff)
		}
		if !strings.HasPrefix(eff.Output, "done\n") {
			t.Errorf("output %q, want the command's own %q", eff.Output, "done\n")
		}
		if eff.Summary != "changes 3 files (+2 −1)" {
			t.Errorf("summary %q, want the three files and their lines", eff.Summary)
		}
		for _, want := range []string{"+three", "created file new.txt", "deleted file old.txt", "-gone soon"} {
			if !strings.Contains(diff, want) {
				t.Errorf("diff lacks %q:\n%s", want, diff)
			}
		}
		if after := tree(t, f.ws); after != before {
			t.Errorf("the preview changed the workspace itself:\nbefore:\n%s\nafter:\n%s", before, after)
		}
	})
}

func TestApplyPutsTheCapturedChangeInPlaceWithoutRunningAgain(t *testing.T) {
	testutil.AsRootAndNot(t, func(t *testing.T) {
		f := newFixture(t, shell.Options{})
		// A command that differs at each run: a fresh random value, and a count of its runs.
		eff, diff := f.run(t, "cat /proc/sys/kernel/random/uuid > token.txt; echo run >> runs.txt")
		if !eff.Appliable() {
			t.Fatalf("no appliable effect: %+v", eff)
		}
		res, err := f.p.Apply(context.Background(), "a-1", f.ws, eff)
		if err != nil {
			t.Fatal(err)
		}
		token, err := os.ReadFile(filepath.Join(f.ws, "token.txt"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(diff, "+"+strings.TrimSpace(string(token))) {
			t.Errorf("the workspace holds token %q, not the one the preview showed:\n%s", token, diff)
		}
		if runs, _ := os.ReadFile(filepath.Join(f.ws, "runs.txt")); string(runs) != "run\n" {
			t.Errorf("runs.txt = %q: the command ran again on approval", runs)
		}
		if !strings.Contains(res, "was applied: changed 2 files") {
			t.Errorf("result %q does not say what was applied", res)
		}
	})
}

func TestApplyRefusesAWorkspaceChangedSinceThePreview(t *testing.T) {
	testutil.AsRootAndNot(t, func(t *testing.T) {
		f := newFixture(t, shell.Options{})
		eff, _ := f.run(t, "echo three >> notes.txt; echo fresh > new.txt")
		write(t, f.ws, map[string]string{"notes.txt": "edited meanwhile\n"})
		before := tree(t, f.ws)
		_, err := f.p.Apply(context.Background(), "a-1", f.ws, eff)
		if !errors.Is(err, ErrStale) || !strings.Contains(err.Error(), "changed 1 file") {
			t.Fatalf("apply on a changed workspace: %v, want ErrStale naming the change", err)
		}
		if after := tree(t, f.ws); after != before {
			t.Errorf("a refused apply changed the workspace:\nbefore:\n%s\nafter:\n%s", before, after)
		}
	})
}

func TestPreviewRunsOnACopyThatReachesNeitherTheWorkspaceNorThePreviewStore(t *testing.T) {
	testutil.AsRootAndNot(t, func(t *testing.T) {
		f := newFixture(t, shell.Options{})
		hostBefore := tree(t, f.ws)
		outside := filepath.Join(filepath.Dir(f.dir), "outside")
		line := fmt.Sprintf("echo x > %s/pwned; echo x > ../store/pwned; ls .. ; mkdir -p %s 2>&1 && echo made outside; pwd",
			f.ws, outside)
		eff, _ := f.run(t, line)
		if !eff.Appliable() {
			t.Fatalf("no appliable effect: %+v", eff)
		}
		if _, err := os.Stat(outside); err == nil {
			t.Errorf("the run ahead made %s outside its copy", outside)
		}
		if strings.Contains(eff.Output, "\nstore\n") || strings.Contains(eff.Output, "\nview\n") || !strings.Contains(eff.Output, "\na-1\n") {
			t.Errorf("the run ahead saw the preview store or its copy's folder:\n%s", eff.Output)
		}
		if got := tree(t, f.ws); got != hostBefore {
			t.Errorf("the run ahead wrote to the workspace itself:\n%s", got)
		}
		store := filepath.Join(f.dir, "a-1", "store")
		for _, l := range strings.Split(tree(t, store), "\n") {
			if name, _, _ := strings.Cut(l, " = "); filepath.Base(name) == "pwned" {
				t.Errorf("the run ahead wrote into the preview store: %s", name)
			}
		}
		if !strings.Contains(eff.Summary, "changes 1 file") {
			t.Errorf("the write to the workspace's own path (its copy) is not its change: %s", eff.Summary)
		}
		if !strings.Contains(eff.Output, f.ws) {
			t.Errorf("pwd in the copy printed %q, want the workspace's own path", eff.Output)
		}
	})
}

func TestPreviewHasNoNetwork(t *testing.T) {
	testutil.AsRootAndNot(t, func(t *testing.T) {
		f := newFixture(t, shell.Options{})
		port := testutil.AcceptingPort(t)
		line := fmt.Sprintf(`python3 -c 'import socket; socket.create_connection(("127.0.0.1", %d), 2)' 2>/dev/null && echo reached || echo unreachable`, port)
		eff, _ := f.run(t, line)
		if !strings.HasPrefix(eff.Output, "unreachable\n") {
			t.Errorf("the run ahead reached the host's loopback: %+v", eff)
		}
		g := newFixture(t, shell.Options{Network: true})
		eff, _ = g.run(t, "true")
		if eff.Appliable() || !strings.Contains(eff.None, "network") {
			t.Errorf("a command granted the network was run ahead without it: %+v", eff)
		}
	})
}

func TestApplyWritesSymlinksAsLinksAndNeverThroughThem(t *testing.T) {
	testutil.AsRootAndNot(t, func(t *testing.T) {
		f := newFixture(t, shell.Options{})
		outside := filepath.Join(filepath.Dir(f.dir), "outside")
		if err := os.Mkdir(outside, 0o755); err != nil {
			t.Fatal(err)
		}
		// In the copy, keep/ becomes a link out of the workspace with a file "under" it.
		eff, _ := f.run(t, fmt.Sprintf("rm -r keep; ln -s %s keep; echo evil > keep/deep.txt; ln -s /etc/passwd pw", outside))
		if !eff.Appliable() {
			t.Fatalf("no appliable effect: %+v", eff)
		}
		if _, err := f.p.Apply(context.Background(), "a-1", f.ws, eff); err != nil {
			t.Fatal(err)
		}
		if got := tree(t, outside); got != ".\n" && got != "./\n" {
			t.Errorf("the apply wrote outside the workspace:\n%s", got)
		}
		if target, err := os.Readlink(filepath.Join(f.ws, "keep")); err != nil || target != outside {
			t.Errorf("keep is %q (%v), want the symlink the command made", target, err)
		}
	})
}

func TestPreviewSaysWhyWhenTheWorkspaceIsOverTheBudget(t *testing.T) {
	testutil.AsRootAndNot(t, func(t *testing.T) {
		f := newFixture(t, shell.Options{})
		f.p = New(Options{Dir: f.dir, MaxBytes: 16})
		t.Cleanup(func() { f.p.Close() })
		eff, _ := f.run(t, "touch x")
		if eff.Appliable() || !strings.Contains(eff.None, "over the") {
			t.Errorf("a workspace over the budget: %+v, want no preview saying why", eff)
		}
	})
}

// The copy is kept between previews, so each preview must start from the workspace as
// it is and not from what the last command left: a file it made, a folder it locked,
// a link it swapped in, a file it rewrote with its old size and time. It runs as a
// user other than root, as the daemon does: the locked copy is opened as its owner.
func TestEachPreviewStartsFromTheWorkspaceNotFromTheLastRun(t *testing.T) {
	if testutil.AsUnprivileged(t) {
		return
	}
	f := newFixture(t, shell.Options{})
	first, _ := f.run(t, "echo left > leftover.txt; rm -r keep; ln -s /etc keep; printf 'ONE\\ntwo\\n' > notes.txt; touch -r old.txt notes.txt; mkfifo pipe; chmod 000 .")
	if !first.Appliable() {
		t.Fatalf("first preview: %+v", first)
	}
	write(t, f.ws, map[string]string{"since.txt": "written between the previews\n"})
	second, diff := f.run(t, "ls -A; cat keep/deep.txt notes.txt")
	if !second.Appliable() || second.Summary != "no changes" || diff != "" {
		t.Fatalf("second preview: %+v\n%s", second, diff)
	}
	want := "keep\nnotes.txt\nold.txt\nsince.txt\ndeep\none\ntwo\n"
	if !strings.HasPrefix(second.Output, want) {
		t.Errorf("the second run saw %q, want the workspace as it is now %q", second.Output, want)
	}
}

// execute_python_file is run ahead as execute_shell is: the script's change is shown,
// and the workspace keeps its own until approval applies it.
func TestPythonFileIsRunAheadToo(t *testing.T) {
	testutil.AsRootAndNot(t, func(t *testing.T) {
		f := newFixture(t, shell.Options{})
		write(t, f.ws, map[string]string{"tidy.py": "open('notes.txt', 'w').write('tidied\\n')\nprint('tidied')\n"})
		bwrap, _ := exec.LookPath("bwrap")
		py, err := shell.NewExecutePythonFile(shell.Options{Sandbox: shell.SandboxBwrap, Bwrap: bwrap})
		if err != nil {
			t.Skipf("no python here: %v", err)
		}
		args, _ := json.Marshal(map[string]any{"path": "tidy.py"})
		eff, diff := f.p.Run(context.Background(), py, commands.Env{Workspace: f.ws, AgentID: "a-1"}, args, commands.Limits{Timeout: time.Minute}, 0)
		if !eff.Appliable() || !strings.HasPrefix(eff.Output, "tidied") || !strings.Contains(diff, "+tidied") || !strings.Contains(diff, "-one") {
			t.Fatalf("python preview: %+v\n%s", eff, diff)
		}
		if body, _ := os.ReadFile(filepath.Join(f.ws, "notes.txt")); string(body) != "one\ntwo\n" {
			t.Errorf("the run ahead changed the workspace: notes.txt = %q", body)
		}
	})
}

// A run ahead that leaves nothing to apply (its change cannot be captured whole) does not
// leave what it wrote in the copy: the copy is put back as the workspace is.
func TestPreviewWithNothingToApplyLeavesNothingInTheCopy(t *testing.T) {
	testutil.AsRootAndNot(t, func(t *testing.T) {
		f := newFixture(t, shell.Options{})
		eff, _ := f.run(t, "echo x > small.txt; truncate -s 300M big.bin")
		if eff.Appliable() || !strings.Contains(eff.None, "captured whole") {
			t.Fatalf("a change past the bounds: %+v, want no preview saying why", eff)
		}
		view := filepath.Join(f.dir, "a-1", "view")
		for _, name := range []string{"small.txt", "big.bin"} {
			if _, err := os.Lstat(filepath.Join(view, name)); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("%s is still in the copy after a preview with nothing to apply (%v)", name, err)
			}
		}
	})
}

// What a diff's text cannot show is said: a symlink's target on its line, binary content
// named in the effect's NotShown, which the one rendering puts on a line of its own.
func TestPreviewFlagsWhatItsDiffCannotShow(t *testing.T) {
	testutil.AsRootAndNot(t, func(t *testing.T) {
		f := newFixture(t, shell.Options{})
		eff, diff := f.run(t, `printf '\0\1\2' > blob.bin; ln -s /etc/passwd pw`)
		if !eff.Appliable() {
			t.Fatalf("no preview: %+v", eff)
		}
		if !strings.Contains(diff, "created symlink pw (mode 0777) (→ /etc/passwd)\n") {
			t.Fatalf("the diff hides the symlink's target:\n%s", diff)
		}
		if eff.NotShown != "blob.bin (binary: 3 bytes)" {
			t.Fatalf("NotShown = %q; want the binary file named", eff.NotShown)
		}
		lines, _ := (&api.Preview{Kind: api.PreviewProgram, Effect: eff, Diff: diff}).Render()
		if !slices.Contains(lines, "Not fully shown: blob.bin (binary: 3 bytes)") {
			t.Fatalf("the rendering does not flag it:\n%s", strings.Join(lines, "\n"))
		}
	})
}

// A workspace whose files read the same but were touched since the preview (a time
// set back, a mode changed and back) is not the one the change was worked out on: the
// apply is refused and says which file.
func TestApplyRefusesAWorkspaceTouchedSinceThePreview(t *testing.T) {
	testutil.AsRootAndNot(t, func(t *testing.T) {
		f := newFixture(t, shell.Options{})
		eff, _ := f.run(t, "echo fresh > new.txt")
		old := time.Unix(1e9, 0)
		if err := os.Chtimes(filepath.Join(f.ws, "keep/deep.txt"), old, old); err != nil {
			t.Fatal(err)
		}
		before := tree(t, f.ws)
		_, err := f.p.Apply(context.Background(), "a-1", f.ws, eff)
		if !errors.Is(err, ErrStale) || !strings.Contains(err.Error(), "keep/deep.txt") {
			t.Fatalf("apply on a touched workspace: %v, want ErrStale naming keep/deep.txt", err)
		}
		if after := tree(t, f.ws); after != before {
			t.Errorf("a refused apply changed the workspace:\nbefore:\n%s\nafter:\n%s", before, after)
		}
	})
}

// A helper writing in agents/<key> while its parent's previewed change is approved
// neither makes the preview stale nor loses what it wrote; a parent's command that
// changes agents/ itself gets no preview to apply.
func TestApplyLeavesHelpersFoldersAlone(t *testing.T) {
	testutil.AsRootAndNot(t, func(t *testing.T) {
		f := newFixture(t, shell.Options{})
		write(t, f.ws, map[string]string{"agents/h/work.txt": "v1\n"})
		eff, _ := f.run(t, "echo three >> notes.txt")
		write(t, f.ws, map[string]string{"agents/h/work.txt": "v2, the helper's\n", "agents/h/more.txt": "more\n"})
		if _, err := f.p.Apply(context.Background(), "a-1", f.ws, eff); err != nil {
			t.Fatalf("apply while a helper wrote in agents/: %v", err)
		}
		if b, _ := os.ReadFile(filepath.Join(f.ws, "agents/h/work.txt")); string(b) != "v2, the helper's\n" {
			t.Errorf("the helper's file reads %q after its parent's apply", b)
		}
		if b, _ := os.ReadFile(filepath.Join(f.ws, "notes.txt")); string(b) != "one\ntwo\nthree\n" {
			t.Errorf("notes.txt = %q: the change was not applied", b)
		}
		os.RemoveAll(filepath.Join(f.ws, "agents"))
		if eff, _ := f.run(t, "mkdir -p agents/x && echo planted > agents/x/file"); eff.Appliable() || !strings.Contains(eff.None, "agents/") {
			t.Fatalf("a change to agents/ was offered to apply: %+v", eff)
		}
	})
}

// The copy is bound at the workspace's own path: what the command records of where it
// runs ($PWD, the working directory) is the workspace, as in the run approval makes.
func TestRunAheadSeesTheWorkspaceAtItsOwnPath(t *testing.T) {
	testutil.AsRootAndNot(t, func(t *testing.T) {
		f := newFixture(t, shell.Options{})
		eff, diff := f.run(t, `pwd > where.txt; echo "$PWD" >> where.txt; ls -a .. >> where.txt`)
		if !eff.Appliable() {
			t.Fatalf("no preview: %+v", eff)
		}
		want := fmt.Sprintf("+%s\n+%s\n+.\n+..\n+%s\n", f.ws, f.ws, filepath.Base(f.ws))
		if !strings.Contains(diff, want) || strings.Contains(diff, ".previews") || strings.Contains(diff, f.dir) {
			t.Fatalf("the run ahead can tell where it runs:\n%s\nwant the lines\n%s", diff, want)
		}
	})
}

// Approving applies the very tree the preview captured and the person saw: when the
// preview store was swapped since (here rebuilt, holding another command's change under
// the same checkpoint ids), Apply fails closed — nothing changes, and the error says
// the store no longer holds the change that was shown.
func TestApplyFailsClosedWhenThePreviewStoreNoLongerHoldsTheChangeShown(t *testing.T) {
	testutil.AsRootAndNot(t, func(t *testing.T) {
		f := newFixture(t, shell.Options{})
		shown, _ := f.run(t, "echo shown > shown.txt")
		if !shown.Appliable() || len(shown.ToRoot) != 64 {
			t.Fatalf("preview: %+v, want an appliable effect with its root hash", shown)
		}
		f.p.Close()
		if err := os.RemoveAll(filepath.Join(f.dir, "a-1")); err != nil {
			t.Fatal(err)
		}
		f.p = New(Options{Dir: f.dir})
		other, _ := f.run(t, "echo swapped > swapped.txt")
		if other.From != shown.From || other.To != shown.To {
			t.Fatalf("the rebuilt store did not reuse the ids (%d→%d, was %d→%d): the test shows nothing", other.From, other.To, shown.From, shown.To)
		}
		before := tree(t, f.ws)
		_, err := f.p.Apply(context.Background(), "a-1", f.ws, shown)
		if !errors.Is(err, ErrStale) || !strings.Contains(err.Error(), "no longer holds the change that was shown") {
			t.Fatalf("apply from a swapped store: %v, want it refused saying why", err)
		}
		if after := tree(t, f.ws); after != before {
			t.Errorf("a refused apply changed the workspace:\nbefore:\n%s\nafter:\n%s", before, after)
		}
	})
}

// A run ahead is bounded by the disk the agent's budget leaves a preview: a workspace
// whose copy would not fit is not copied, and a command that writes past the bound —
// still writing when it is looked at, or done before — or beyond what the disk walk can
// count (folders nested past its depth) is stopped, gets no preview saying why, and
// leaves nothing in the copy; the workspace itself is untouched.
func TestPreviewIsBoundedByTheDiskItsBudgetLeaves(t *testing.T) {
	testutil.AsRootAndNot(t, func(t *testing.T) {
		for _, c := range []struct {
			name, line string
			room       int64
			workspace  int // bytes of one more file in the workspace
			want       string
		}{
			{"copy_would_not_fit", "touch x", 150 << 10, 100 << 10, "would not fit in the 150 KiB of disk"},
			{"copy_and_store_take_more", "touch x", 16 << 10, 0, "its copy of the workspace and its checkpoints take"},
			{"still_writing_is_stopped", "head -c 8388608 /dev/zero > big.bin; sleep 60", 2 << 20, 0, "its run ahead wrote past the 2 MiB"},
			{"wrote_past_before_it_ended", "head -c 8388608 /dev/zero > big.bin", 2 << 20, 0, "its run ahead wrote past the 2 MiB"},
			{"nested_past_the_walk_is_stopped", `python3 -c 'import os
for _ in range(2100):
    os.mkdir("d"); os.chdir("d")'; sleep 60`, 64 << 20, 0, "its run ahead could not be shown within the 64 MiB"},
		} {
			t.Run(c.name, func(t *testing.T) {
				f := newFixture(t, shell.Options{})
				if c.workspace > 0 {
					write(t, f.ws, map[string]string{"data.bin": strings.Repeat("d", c.workspace)})
				}
				before := tree(t, f.ws)
				f.room = c.room
				eff, _ := f.run(t, c.line)
				if eff.Appliable() || !strings.Contains(eff.None, c.want) {
					t.Fatalf("preview: %+v, want no preview saying %q", eff, c.want)
				}
				if _, err := os.Lstat(filepath.Join(f.dir, "a-1", "view", "big.bin")); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("what the run ahead wrote is still in the copy (%v)", err)
				}
				if after := tree(t, f.ws); after != before {
					t.Errorf("the preview changed the workspace:\nbefore:\n%s\nafter:\n%s", before, after)
				}
			})
		}
	})
}

// Sparse files take a few blocks in the copy but their whole size in the store that
// would capture them: a run ahead that writes them past the room its budget leaves gets
// no preview, and neither the copy nor the store keeps what it wrote.
func TestSparseFilesAreBoundedByTheirFullSize(t *testing.T) {
	testutil.AsRootAndNot(t, func(t *testing.T) {
		f := newFixture(t, shell.Options{})
		f.room = 2 << 20
		before, _ := commands.DiskUsage(f.dir)
		eff, _ := f.run(t, `for i in 1 2 3 4 5 6 7 8; do truncate -s 8M s$i && printf $i | dd of=s$i bs=1 seek=4096 conv=notrunc 2>/dev/null; done`)
		after, _ := commands.DiskUsage(f.dir)
		if eff.Appliable() || !strings.Contains(eff.None, "past its limit") {
			t.Errorf("64 MiB of sparse files against a 2 MiB room: appliable=%v, none=%q; want no preview, saying why", eff.Appliable(), eff.None)
		}
		if after-before > f.room {
			t.Errorf("the preview took %d KiB of disk, over its %d KiB room", (after-before)>>10, f.room>>10)
		}
	})
}

// The preview store may give its checkpoint ids again to other trees (it is rebuilt,
// or a crash loses its newest records): a preview whose change ends in the tree the
// store holds under To, but started from another tree than the one under From, is
// refused, naming the start, and nothing changes. The end trees are made alike here
// by hand, as only such a coincidence gets past To's check.
func TestApplyFailsClosedWhenThePreviewStoreHoldsAnotherStartUnderFrom(t *testing.T) {
	testutil.AsRootAndNot(t, func(t *testing.T) {
		f := newFixture(t, shell.Options{})
		shown, _ := f.run(t, "echo shown > shown.txt")
		if !shown.Appliable() || len(shown.FromRoot) != 64 {
			t.Fatalf("preview: %+v, want an appliable effect with its start tree's root hash", shown)
		}
		f.p.Close()
		if err := os.RemoveAll(filepath.Join(f.dir, "a-1")); err != nil {
			t.Fatal(err)
		}
		write(t, f.ws, map[string]string{"notes.txt": "another start\n"})
		f.p = New(Options{Dir: f.dir})
		other, _ := f.run(t, "echo swapped > swapped.txt")
		if other.From != shown.From || other.To != shown.To || other.FromRoot == shown.FromRoot {
			t.Fatalf("the rebuilt store did not give the ids again to another start (%d→%d from %.12s, was %d→%d from %.12s): the test shows nothing",
				other.From, other.To, other.FromRoot, shown.From, shown.To, shown.FromRoot)
		}
		shown.ToRoot = other.ToRoot
		before := tree(t, f.ws)
		_, err := f.p.Apply(context.Background(), "a-1", f.ws, shown)
		if !errors.Is(err, ErrStale) || !strings.Contains(err.Error(), "no longer holds the workspace the change was worked out on") {
			t.Fatalf("apply over another start under the same ids: %v, want it refused naming the start", err)
		}
		if after := tree(t, f.ws); after != before {
			t.Errorf("a refused apply changed the workspace:\nbefore:\n%s\nafter:\n%s", before, after)
		}
	})
}

// A proposal stored before previews recorded their start tree cannot be checked
// against it: approving it is refused as stale (the preview runs again and is asked
// again), saying why, and nothing changes.
func TestApplyRefusesAPreviewWithoutItsStartTree(t *testing.T) {
	testutil.AsRootAndNot(t, func(t *testing.T) {
		f := newFixture(t, shell.Options{})
		eff, _ := f.run(t, "echo fresh > new.txt")
		eff.FromRoot = ""
		before := tree(t, f.ws)
		_, err := f.p.Apply(context.Background(), "a-1", f.ws, eff)
		if !errors.Is(err, ErrStale) || !strings.Contains(err.Error(), "before previews recorded the workspace they start from") {
			t.Fatalf("apply of a preview without its start tree: %v, want ErrStale saying why", err)
		}
		if after := tree(t, f.ws); after != before {
			t.Errorf("a refused apply changed the workspace:\nbefore:\n%s\nafter:\n%s", before, after)
		}
	})
}
