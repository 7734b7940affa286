package shell

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentd/agentd/internal/testutil"
)

// TestSandboxProbes runs, inside the sandbox, what a hostile program would try: use
// capabilities, read root's files, remount the system, read the daemon's environment,
// reach host loopback services, exhaust processes, disk and /tmp. As root (CI's case too)
// each probe that root could do unsandboxed has that control run, so a case cannot pass
// because the probe itself is broken.
func TestSandboxProbes(t *testing.T) {
	bwrap := bwrapHere(t)
	t.Setenv("AGENTD_TEST_TOKEN", "xoxb-do-not-leak")
	port := testutil.AcceptingPort(t)
	root := os.Geteuid() == 0
	o := Options{Sandbox: SandboxBwrap, Bwrap: bwrap, Limits: Limits{Procs: 24, FileSize: 1 << 20, Tmp: 8 << 20}}
	c := mustShell(t, o)
	// forks forks 40 children that sleep, stopping at the first refusal.
	const forks = `import os, time
n = 0
for i in range(40):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(5.6161)
        os._exit(0)
    n += 1
print("forked", n)`
	// keyring adds a key to the uid's user keyring with add_key(2), by its number here.
	keyring := fmt.Sprintf(`import ctypes
libc = ctypes.CDLL(None, use_errno=True)
r = libc.syscall(%d, b"user", b"agentd-probe", b"x", 1, -4)
print("keyring usable" if r >= 0 else "keyring refused")`, unix.SYS_ADD_KEY)
	tests := []struct {
		name    string
		line    string
		want    []string
		notWant []string
		rootCtl bool // as root, the unsandboxed control must not give all of want
	}{
		{name: "no_capabilities", line: `grep -E '^Cap(Inh|Prm|Eff|Bnd|Amb)' /proc/self/status`,
			want: []string{"CapInh:\t0000000000000000", "CapPrm:\t0000000000000000", "CapEff:\t0000000000000000",
				"CapBnd:\t0000000000000000", "CapAmb:\t0000000000000000"}, rootCtl: true},
		{name: "unprivileged_uid", line: `echo "uid=$(id -u) euid=$(id -u) groups=$(id -G)"`,
			notWant: []string{"uid=0 ", "euid=0 ", "groups=0"}},
		{name: "no_new_privs", line: `grep NoNewPrivs /proc/self/status`, want: []string{"NoNewPrivs:\t1"}},
		{name: "shadow_unreadable", line: `cat /etc/shadow >/dev/null 2>&1 && echo read-shadow || echo refused`,
			want: []string{"refused"}, notWant: []string{"read-shadow"}, rootCtl: true},
		{name: "system_not_remountable", line: `mount -o remount,rw /usr 2>/dev/null && echo remounted-usr; ` +
			`mount -o remount,rw /etc 2>/dev/null && echo remounted-etc; mount -t tmpfs none /usr 2>/dev/null && echo mounted; echo done`,
			want: []string{"done"}, notWant: []string{"remounted", "mounted"}},
		{name: "no_nested_privileged_namespace", line: `unshare -r -m sh -c 'mount -t tmpfs none /etc && echo mounted-etc' 2>/dev/null; echo done`,
			want: []string{"done"}, notWant: []string{"mounted-etc"}},
		{name: "host_processes_invisible", line: `cat /proc/1/environ /proc/$PPID/environ 2>/dev/null | tr '\0' '\n'; ls /proc | grep -c '^[0-9]'`,
			notWant: []string{"xoxb", "AGENTD_TEST_TOKEN"}},
		{name: "host_loopback_unreachable", line: fmt.Sprintf(`python3 -c 'import socket; socket.create_connection(("127.0.0.1", %d), 2); print("connected")' 2>/dev/null || echo no-connection`, port),
			want: []string{"no-connection"}, notWant: []string{"connected\n"}},
		{name: "processes_bounded", line: `python3 -c '` + forks + `'`, want: []string{"forked "}, notWant: []string{"forked 40"}},
		// At most 24 processes of the uid: the shell, python and 20-odd children, not 40;
		// fewer when other sandboxed commands (other tests' too) run as the uid meanwhile.
		{name: "file_size_bounded", line: `head -c 3000000 /dev/zero > big; echo "size $(stat -c %s big)"`,
			want: []string{"size 1048576"}},
		{name: "tmp_bounded", line: `for i in $(seq 12); do head -c 1000000 /dev/zero > /tmp/f$i || break; done; df -k /tmp | tail -1`,
			want: []string{"No space left on device", " 8192 "}},
		{name: "no_core_dumps", line: `ulimit -c`, want: []string{"0\n"}},
		// The kernel's keyrings are per uid, not per sandbox: every agent's runs share the
		// sandbox uid's, a channel between them and a store that outlives each run.
		{name: "no_kernel_keyring", line: `python3 -c '` + keyring + `'`, want: []string{"keyring refused"},
			notWant: []string{"keyring usable"}, rootCtl: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := workspace(t)
			got, err := run(context.Background(), t, c, ws, shellLine(tt.line), 30*time.Second)
			if err != nil {
				t.Fatalf("error %v; output:\n%s", err, got)
			}
			checkResult(t, got, "", tt.want, tt.notWant)
			if tt.rootCtl && root {
				ctl, _ := run(context.Background(), t, mustShell(t, Options{Sandbox: SandboxNone}), workspace(t), shellLine(tt.line), 30*time.Second)
				if !slices.ContainsFunc(tt.want, func(w string) bool { return !strings.Contains(ctl, w) }) {
					t.Errorf("unsandboxed control as root gives the same, so the case proves nothing:\n%s", ctl)
				}
			}
			waitGone(t, "5.6161")
		})
	}
}

// TestSandboxEnvAllowlist checks that nothing of the daemon's environment reaches the
// program but the allowlist and pass_env.
func TestSandboxEnvAllowlist(t *testing.T) {
	bwrap := bwrapHere(t)
	t.Setenv("AGENTD_TEST_TOKEN", "xoxb-do-not-leak")
	t.Setenv("AGENTD_TEST_PASSED", "passed")
	c := mustShell(t, Options{Sandbox: SandboxBwrap, Bwrap: bwrap, PassEnv: []string{"AGENTD_TEST_PASSED"}})
	ws := workspace(t)
	got, err := run(context.Background(), t, c, ws, shellLine(`env -0 | tr '\0' '\n' | cut -d= -f1 | sort | tr '\n' ' '`), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	allowed := []string{"PATH", "HOME", "LANG", "TERM", "AGENTD_TEST_PASSED", "PWD", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_COUNT", "GIT_CONFIG_KEY_0", "GIT_CONFIG_VALUE_0", "GOENV", "LESSKEYIN", "LESSKEY", "PYTHONNOUSERSITE"} // PWD is the shell's own
	names := strings.Fields(strings.SplitN(got, "\n", 2)[0])
	for _, n := range names {
		if !slices.Contains(allowed, n) {
			t.Errorf("variable %s reached the program; only %v may", n, allowed)
		}
	}
	if !slices.Contains(names, "AGENTD_TEST_PASSED") || !slices.Contains(names, "HOME") {
		t.Errorf("variables %v lack pass_env's or HOME", names)
	}
}

// TestSandboxWorkspaceProtection checks that git's hooks and config of the workspace's
// repositories and the helpers' agents/ folder cannot be changed, renamed away or
// replaced inside the sandbox, while the rest stays writable and what the sandbox makes
// stays usable to the daemon.
func TestSandboxWorkspaceProtection(t *testing.T) {
	bwrap := bwrapHere(t)
	c := mustShell(t, Options{Sandbox: SandboxBwrap, Bwrap: bwrap})
	ws := workspace(t)
	for _, repo := range []string{".", "sub/repo", "nohooks"} {
		os.MkdirAll(filepath.Join(ws, repo, ".git", "objects"), 0o755)
		os.WriteFile(filepath.Join(ws, repo, ".git", "config"), []byte("[core]\n"), 0o644)
		if repo != "nohooks" {
			os.MkdirAll(filepath.Join(ws, repo, ".git", "hooks"), 0o755)
		}
	}
	os.MkdirAll(filepath.Join(ws, "deep/a/b/.git"), 0o755) // below repoDepth: not protected
	os.MkdirAll(filepath.Join(ws, "agents/helper"), 0o755)
	os.WriteFile(filepath.Join(ws, "agents/helper/notes.txt"), []byte("helper's\n"), 0o644)
	attacks := []string{
		"echo evil > .git/hooks/pre-commit", "echo '[core] hooksPath = /tmp' >> .git/config", "mv .git g", "rm -rf .git/hooks",
		"echo evil > sub/repo/.git/hooks/post-checkout", "mv sub s", "mv sub/repo sub/r", "mv sub/repo/.git sub/repo/g",
		"echo evil > nohooks/.git/hooks/pre-commit", "mkdir nohooks/.git/hooks/x",
		"echo x > agents/helper/notes.txt", "rm -rf agents/helper", "mv agents a2", "ln -s / agents/helper/root",
	}
	line := strings.Join(attacks, " 2>/dev/null; ") + " 2>/dev/null; " +
		"touch .git/objects/ok sub/repo/.git/objects/ok deep/a/b/.git/ok && echo objects-writable; " +
		"mkdir -p out/d && echo data > out/d/f && chmod 600 out/d/f && chmod 700 out/d && echo made"
	got, err := run(context.Background(), t, c, ws, shellLine(line), time.Minute)
	if err != nil || !strings.Contains(got, "objects-writable") || !strings.Contains(got, "made") {
		t.Fatalf("got %q, %v; want the rest of the workspace writable", got, err)
	}
	for _, p := range []string{".git/hooks/pre-commit", "sub/repo/.git/hooks/post-checkout", "nohooks/.git/hooks/pre-commit",
		"nohooks/.git/hooks/x", "g", "s", "sub/r", "sub/repo/g", "a2", "agents/helper/root"} {
		if _, err := os.Lstat(filepath.Join(ws, p)); err == nil {
			t.Errorf("%s was made inside the sandbox", p)
		}
	}
	for p, want := range map[string]string{".git/config": "[core]\n", "agents/helper/notes.txt": "helper's\n"} {
		if b, _ := os.ReadFile(filepath.Join(ws, p)); string(b) != want {
			t.Errorf("%s is %q; want %q unchanged", p, b, want)
		}
	}
	if b, err := os.ReadFile(filepath.Join(ws, "out/d/f")); err != nil || string(b) != "data\n" {
		t.Errorf("daemon reading what the sandbox made: %q, %v", b, err)
	}
	if err := os.RemoveAll(filepath.Join(ws, "out")); err != nil {
		t.Errorf("daemon removing what the sandbox made: %v", err)
	}
}

// TestSandboxOwnershipAsRoot checks the chown before a run as root: the workspace goes to
// the sandbox's uid, but never through a symlink or a hard link to a file of the host's.
func TestSandboxOwnershipAsRoot(t *testing.T) {
	bwrap := bwrapHere(t)
	if os.Geteuid() != 0 {
		t.Skip("the workspace is chowned only when agentd runs as root")
	}
	c := mustShell(t, Options{Sandbox: SandboxBwrap, Bwrap: bwrap})
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret")
	os.WriteFile(secret, []byte("host-secret\n"), 0o600)
	ws := workspace(t)
	os.MkdirAll(filepath.Join(ws, "mine"), 0o700)
	os.WriteFile(filepath.Join(ws, "mine/file"), []byte("mine\n"), 0o600)
	if err := os.Link(secret, filepath.Join(ws, "hardlink")); err != nil {
		t.Fatal(err)
	}
	os.Symlink(secret, filepath.Join(ws, "symlink"))
	os.Symlink(outside, filepath.Join(ws, "dirlink"))
	got, err := run(context.Background(), t, c, ws, shellLine("cat mine/file; echo more >> mine/file; cat hardlink; echo --; cat symlink; ls dirlink"), time.Minute)
	if err != nil || !strings.Contains(got, "mine\n") || strings.Contains(got, "host-secret") {
		t.Errorf("got %q, %v; want the workspace's file read and the host's not", got, err)
	}
	for _, p := range []string{secret, outside} {
		if st := statOf(t, p); st.Uid != 0 || st.Gid != 0 {
			t.Errorf("%s was given to uid %d", p, st.Uid)
		}
	}
	if st := statOf(t, filepath.Join(ws, "mine/file")); st.Uid != DefaultUID {
		t.Errorf("workspace file owned by %d; want %d", st.Uid, DefaultUID)
	}
}

func statOf(t *testing.T, p string) *syscall.Stat_t {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t)
}
