package checkpoint

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/agentd/agentd/internal/testutil"
)

// crashEnv, set in a child process of the test binary, makes it run one store
// operation and kill itself with SIGKILL at a chosen step (see crashChild).
const crashEnv = "AGENTD_CHECKPOINT_CRASH"

func TestMain(m *testing.M) {
	if spec := os.Getenv(crashEnv); spec != "" {
		os.Exit(crashChild(spec))
	}
	os.Exit(m.Run())
}

// crashSpec is the operation a child runs, and where it dies.
type crashSpec struct {
	Op     string // "checkpoint", "restore" or "apply" (RestoreFrom From)
	Store  string
	WS     string
	From   ID
	To     ID
	KillAt int // the step (a testHookStep call) at which it kills itself
	Keep   int // Options.KeepCount
}

// crashChild runs the operation spec names, with SIGKILL at its KillAt'th step.
func crashChild(spec string) int {
	var c crashSpec
	if err := json.Unmarshal([]byte(spec), &c); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	n := 0
	testHookStep = func() {
		if n++; n == c.KillAt {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {} // the signal is on its way
		}
	}
	s, err := Open(c.Store, Options{KeepCount: c.Keep})
	if err == nil {
		switch c.Op {
		case "checkpoint":
			_, err = s.Checkpoint(ctx, c.WS)
		case "restore":
			_, err = s.Restore(ctx, c.WS, c.To)
		case "apply":
			_, err = s.RestoreFrom(ctx, c.WS, c.From, c.To)
		}
		s.Close() // after the collection a checkpoint may have left running
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	return 0
}

// runKilled runs spec in a child process and reports whether it was killed; false
// means it finished before reaching the step.
func runKilled(t *testing.T, spec crashSpec) bool {
	t.Helper()
	b, _ := json.Marshal(spec)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashEnv+"="+string(b))
	out, err := cmd.CombinedOutput()
	if err == nil {
		return false
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if st, ok := ee.Sys().(syscall.WaitStatus); ok && st.Signaled() && st.Signal() == syscall.SIGKILL {
			return true
		}
	}
	t.Fatalf("child running %s: %v\n%s", spec.Op, err, out)
	return false
}

// TestKillDuringCheckpointLosesNothing kills a checkpoint (and the retention that
// follows it) at every step that touches the disk, and checks after each kill that the
// store is whole, every checkpoint kept restores exactly, and the workspace was never
// touched.
func TestKillDuringCheckpointLosesNothing(t *testing.T) {
	kills, inRetention := 0, 0
	for at := 1; ; at++ {
		dir, ws := t.TempDir(), t.TempDir()
		s, err := Open(dir, Options{KeepCount: 2})
		if err != nil {
			t.Fatal(err)
		}
		want := map[ID]string{}
		writeFiles(t, ws, map[string]string{"a": "alpha\n", "d/b": "beta\n", "d/e/c": "gamma\n"})
		want[mustCheckpoint(t, s, ws).ID] = listing(t, ws)
		writeFiles(t, ws, map[string]string{"a": "alpha 2\n", "n/new": "new\n"})
		want[mustCheckpoint(t, s, ws).ID] = listing(t, ws)
		writeFiles(t, ws, map[string]string{"a": "alpha 3\n", "d/e/c": "gamma 3\n", "m/1": "one", "m/2": "two", "m/3": "three"})
		os.RemoveAll(filepath.Join(ws, "n"))
		os.Chmod(filepath.Join(ws, "d/b"), 0o600)
		want[3] = listing(t, ws)
		s.Close()

		if !runKilled(t, crashSpec{Op: "checkpoint", Store: dir, WS: ws, KillAt: at, Keep: 2}) {
			break
		}
		kills++
		s, err = Open(dir, Options{}) // keeping more, so restoring each below drops none
		if err != nil {
			t.Fatalf("kill at step %d: reopening: %v", at, err)
		}
		sameListing(t, fmt.Sprintf("kill at step %d: the workspace", at), listing(t, ws), want[3])
		verifyStore(t, s)
		list, err := s.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(list) < 2 || list[len(list)-1].ID < 2 {
			t.Fatalf("kill at step %d: checkpoints %v kept; the two taken before are not both there or replaced by a newer one", at, infoIDs(list))
		}
		if list[0].ID == 2 {
			inRetention++ // checkpoint 1 was dropped: killed while collecting
		}
		for _, c := range list {
			if _, err := s.Restore(ctx, ws, c.ID); err != nil {
				t.Fatalf("kill at step %d: restore %d: %v", at, c.ID, err)
			}
			sameListing(t, fmt.Sprintf("kill at step %d: checkpoint %d restored", at, c.ID), listing(t, ws), want[c.ID])
		}
		s.Close()
	}
	if kills < 10 || inRetention == 0 {
		t.Fatalf("a checkpoint was killed at %d steps, %d of them in retention; the hook is not reached", kills, inRetention)
	}
	t.Logf("killed at %d steps, %d of them while dropping the oldest checkpoint", kills, inRetention)
}

// TestKillDuringRestoreLosesNothing kills a restore at every step that touches the
// disk. After each kill, reopening finishes it: the workspace is either as it was
// (killed before the journal) or exactly the target, and then the state it replaced is
// a checkpoint that restores exactly. It runs as a user other than root, as the
// daemon does, with a folder and a file the target holds locked (mode 000).
func TestKillDuringRestoreLosesNothing(t *testing.T) {
	if testutil.AsUnprivileged(t) {
		return
	}
	kills, finished := 0, 0
	for at := 1; ; at++ {
		dir, ws := t.TempDir(), lockableTempDir(t)
		s := mustOpen(t, dir, Options{})
		writeFiles(t, ws, map[string]string{"a": "alpha\n", "sub/b": "beta\n", "sub/deeper/c": "gamma\n", "f": "a file"})
		os.Symlink("sub/b", filepath.Join(ws, "link"))
		os.Link(filepath.Join(ws, "a"), filepath.Join(ws, "sub/a-too"))
		os.Chmod(filepath.Join(ws, "sub/b"), 0o000)
		os.Chmod(filepath.Join(ws, "sub/deeper"), 0o000)
		target := mustCheckpoint(t, s, ws)
		wantTarget := listing(t, ws)
		os.Chmod(filepath.Join(ws, "sub/deeper"), 0o755)
		os.RemoveAll(filepath.Join(ws, "sub"))
		os.Remove(filepath.Join(ws, "f"))
		writeFiles(t, ws, map[string]string{"a": "changed\n", "f/now-a-folder": "x", "new/n": "new"})
		os.Remove(filepath.Join(ws, "link"))
		os.Symlink("/etc", filepath.Join(ws, "link"))
		wantBefore := listing(t, ws)
		s.Close()

		if !runKilled(t, crashSpec{Op: "restore", Store: dir, WS: ws, To: target.ID, KillAt: at}) {
			break
		}
		kills++
		s = reopenAfterKill(t, dir, at)
		switch got := listing(t, ws); got {
		case wantBefore: // killed before the journal: nothing changed
		case wantTarget:
			finished++
			list, _ := s.List(ctx)
			before := list[len(list)-1]
			if before.ID == target.ID {
				t.Fatalf("kill at step %d: the restore finished but the state it replaced is in no checkpoint", at)
			}
			mustRestore(t, s, ws, before.ID)
			sameListing(t, fmt.Sprintf("kill at step %d: undoing the finished restore", at), listing(t, ws), wantBefore)
		default:
			sameListing(t, fmt.Sprintf("kill at step %d: neither the state before nor the target", at), got, wantTarget)
		}
		s.Close()
	}
	if kills < 10 || finished == 0 {
		t.Fatalf("a restore was killed at %d steps, %d of them finished by recovery; the hook is not reached", kills, finished)
	}
	t.Logf("killed at %d steps; recovery finished the restore after %d of them", kills, finished)
}

// TestKillDuringApplyLosesNothing kills an apply (RestoreFrom) at every step that
// touches the disk. After each kill, reopening finishes it: the workspace is either as
// it was or exactly the copy the change was made on, never half of it.
func TestKillDuringApplyLosesNothing(t *testing.T) {
	kills, finished := 0, 0
	for at := 1; ; at++ {
		dir, ws, cp := t.TempDir(), t.TempDir(), t.TempDir()
		s := mustOpen(t, dir, Options{})
		writeFiles(t, ws, map[string]string{"a": "alpha\n", "sub/b": "beta\n", "sub/deeper/c": "gamma\n", "same": "untouched\n"})
		from := mustCheckpoint(t, s, ws)
		wantBefore := listing(t, ws)
		mustRestore(t, s, cp, from.ID)
		writeFiles(t, cp, map[string]string{"a": "changed\n", "new/n": "new", "sub/deeper/c": "gamma\ndelta\n"})
		os.Remove(filepath.Join(cp, "sub/b"))
		os.Symlink("../a", filepath.Join(cp, "sub/link"))
		os.Link(filepath.Join(cp, "new/n"), filepath.Join(cp, "n-too"))
		to := mustCheckpoint(t, s, cp)
		wantAfter := listing(t, cp)
		s.Close()

		if !runKilled(t, crashSpec{Op: "apply", Store: dir, WS: ws, From: from.ID, To: to.ID, KillAt: at}) {
			sameListing(t, "after the apply ran whole", listing(t, ws), wantAfter)
			break
		}
		kills++
		s = reopenAfterKill(t, dir, at)
		switch got := listing(t, ws); got {
		case wantBefore:
		case wantAfter:
			finished++
		default:
			sameListing(t, fmt.Sprintf("kill at step %d: neither the state before nor the change applied", at), got, wantAfter)
		}
		s.Close()
	}
	if kills < 5 || finished == 0 {
		t.Fatalf("an apply was killed at %d steps, %d of them finished by recovery; the hook is not reached", kills, finished)
	}
	t.Logf("killed at %d steps; recovery finished the apply after %d of them", kills, finished)
}

// TestKillWhileLendingGivesTheModeBackOnOpen kills a checkpoint of a workspace whose
// folder and file are locked (mode 000) at every step, those right after access was
// lent included. Reopening the store gives every mode back, as it finishes a restore, so
// a crash never leaves what the agent locked open to the daemon's user or anyone.
func TestKillWhileLendingGivesTheModeBackOnOpen(t *testing.T) {
	if testutil.AsUnprivileged(t) {
		return
	}
	kills := 0
	for at := 1; ; at++ {
		dir, ws := t.TempDir(), lockableTempDir(t)
		writeFiles(t, ws, map[string]string{"locked/in.txt": "inside\n", "locked/deeper/c": "c\n", "f": "a file\n"})
		for _, p := range []string{"locked/deeper", "locked", "f"} {
			os.Chmod(filepath.Join(ws, p), 0o000)
		}
		want := listing(t, ws)
		if !runKilled(t, crashSpec{Op: "checkpoint", Store: dir, WS: ws, KillAt: at}) {
			break
		}
		kills++
		s := reopenAfterKill(t, dir, at)
		sameListing(t, fmt.Sprintf("kill at step %d: the workspace after reopening", at), listing(t, ws), want)
		s.Close()
	}
	if kills < 3 {
		t.Fatalf("a checkpoint was killed at %d steps; the hook is not reached", kills)
	}
}

// reopenAfterKill opens the store at dir after a kill at step at, recovers it and
// checks it is whole.
func reopenAfterKill(t *testing.T, dir string, at int) *Store {
	t.Helper()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatalf("kill at step %d: reopening: %v", at, err)
	}
	if err := s.Recover(t.Context()); err != nil {
		t.Fatalf("kill at step %d: recovering: %v", at, err)
	}
	verifyStore(t, s)
	return s
}
