package testutil

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"
)

// Unprivileged is the uid (and gid) AsUnprivileged runs a test as: nobody, which
// owns nothing on the machine, as the agentd user owns nothing but its own files.
const Unprivileged = 65534

// unprivilegedEnv marks the re-run test binary, so it runs the test itself.
const unprivilegedEnv = "AGENTD_TEST_UNPRIVILEGED"

// AsUnprivileged makes the test run as a daemon that is not root, as production's
// agentd user: when the suite runs as root, it re-runs this one test in a copy of the
// test binary as uid Unprivileged, with TMPDIR and HOME in a folder that uid owns and
// the package folder as its working folder, reports the run's output and returns true:
// the caller returns at once. In that run (or when not root at all) it returns false
// and the test goes on, as that uid. Root bypasses every permission bit, so a test of
// code that must cope with modes like 000 would otherwise never see the production path.
func AsUnprivileged(t *testing.T) bool {
	t.Helper()
	if os.Geteuid() != 0 || os.Getenv(unprivilegedEnv) != "" {
		return false
	}
	dir, err := unprivilegedCopy()
	if dir != "" {
		t.Cleanup(func() { os.RemoveAll(dir) })
	}
	if err != nil {
		t.Skipf("cannot set up a run as uid %d (needs a folder it owns and a copy of the test binary): %v", Unprivileged, err)
	}
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(tmp, Unprivileged, Unprivileged); err != nil {
		t.Fatal(err)
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"-test.run=^" + regexp.QuoteMeta(t.Name()) + "$", "-test.count=1"}
	if testing.Verbose() {
		args = append(args, "-test.v")
	}
	if testing.Short() {
		args = append(args, "-test.short")
	}
	cmd := exec.Command(filepath.Join(dir, "test"), args...)
	cmd.Dir = wd
	cmd.Env = append(os.Environ(), unprivilegedEnv+"=1", "TMPDIR="+tmp, "HOME="+tmp)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: Unprivileged, Gid: Unprivileged}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Errorf("as uid %d: %v\n%s", Unprivileged, err, out)
	} else if testing.Verbose() {
		t.Logf("as uid %d:\n%s", Unprivileged, out)
	}
	return true
}

// AsRootAndNot runs test as both kinds of daemon: as root (subtest as_root, skipped when
// the suite is not root) and as one that is not root (as_unprivileged, AsUnprivileged).
func AsRootAndNot(t *testing.T, test func(t *testing.T)) {
	t.Run("as_root", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("the suite does not run as root")
		}
		test(t)
	})
	t.Run("as_unprivileged", func(t *testing.T) {
		if !AsUnprivileged(t) {
			test(t)
		}
	})
}

// unprivilegedCopy makes a folder uid Unprivileged may enter, with a copy of
// the running test binary in it that the uid may run (the go tool's build folder is
// root's alone).
func unprivilegedCopy() (string, error) {
	dir, err := os.MkdirTemp("", "unprivileged")
	if err != nil {
		return "", err
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return dir, err
	}
	self, err := os.Executable()
	if err != nil {
		return dir, err
	}
	in, err := os.Open(self)
	if err != nil {
		return dir, err
	}
	defer in.Close()
	out, err := os.OpenFile(filepath.Join(dir, "test"), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		return dir, err
	}
	_, err = io.Copy(out, in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return dir, err
}

// execOnlyEnv names, for the run as Unprivileged, the copy ExecOnlyProgram made.
const execOnlyEnv = "AGENTD_TEST_EXEC_ONLY"

// ExecOnlyProgram is a copy of the program at src that root owns and no one may read,
// only run (mode 0111, as some systems ship sudo), in a folder every uid may enter. Call
// it before AsRootAndNot or AsUnprivileged: as root it makes the copy and names it in the
// environment the run as Unprivileged inherits, where it returns that name. A suite not
// run as root cannot make one: the test is skipped.
func ExecOnlyProgram(t *testing.T, src string) string {
	t.Helper()
	if p := os.Getenv(execOnlyEnv); p != "" || os.Geteuid() != 0 {
		if p == "" {
			t.Skip("needs a program root owns that may only be run (mode 0111), which only a suite run as root makes")
		}
		return p
	}
	dir, err := os.MkdirTemp("", "execonly")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	b, err := os.ReadFile(src)
	if err != nil {
		t.Skipf("no %s to copy: %v", src, err)
	}
	p := filepath.Join(dir, "execonly-"+filepath.Base(src))
	if err := os.WriteFile(p, b, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, 0o111); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv(execOnlyEnv, p)
	return p
}
