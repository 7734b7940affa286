package shell

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentd/agentd/internal/testutil"
)

// TestSandbox checks what a command under bwrap can and cannot reach. Each case that must
// fail inside the sandbox has an unsandboxed control where it works, so a case cannot pass
// because the test itself is broken.
func TestSandbox(t *testing.T) {
	bwrap := bwrapHere(t)
	if _, err := lookProgram("", "bash"); err != nil {
		t.Skip("bash (for /dev/tcp) is not installed")
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var accepted atomic.Int32
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			conn.Close()
		}
	}()

	ro := t.TempDir()
	os.Chmod(ro, 0o755) // like /opt/toolchain: the sandbox's uid reads it
	os.WriteFile(filepath.Join(ro, "visible.txt"), []byte("visible-content\n"), 0o644)
	os.MkdirAll(filepath.Join(ro, "secret"), 0o755)
	os.WriteFile(filepath.Join(ro, "secret", "token"), []byte("secret-token\n"), 0o644)

	// Places a sandboxed write must not reach; removed afterwards in case one does.
	outside := t.TempDir()
	home, err := os.UserHomeDir()
	if err != nil {
		home = outside
	}
	marker := fmt.Sprintf(".agentd-sandbox-test-%d", os.Getpid())
	hostHome := filepath.Join(home, marker)
	hostTmp := filepath.Join(os.TempDir(), marker)
	hostSys := []string{filepath.Join("/usr", marker), filepath.Join("/etc", marker)} // writable by root only
	for _, p := range append([]string{hostHome, hostTmp}, hostSys...) {
		t.Cleanup(func() { os.Remove(p) })
	}

	connect := fmt.Sprintf("bash -c 'exec 3<>/dev/tcp/127.0.0.1/%d' 2>/dev/null && echo connected || echo no-connection", ln.Addr().(*net.TCPAddr).Port)
	tests := []struct {
		name       string
		line       string
		want       []string
		notWant    []string
		absent     []string // host paths that must not exist afterwards
		present    []string // workspace files that must
		controlled bool     // the unsandboxed run must give the opposite
	}{
		{name: "network_off", line: connect, want: []string{"no-connection"}, controlled: true},
		{name: "only_loopback_interface", line: "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '", want: []string{"lo\n"},
			notWant: []string{"eth", "ens", "wl", "docker", "veth"}},
		{name: "workspace_writable", line: "mkdir -p sub && echo in > sub/inside.txt && cat sub/inside.txt", want: []string{"in\n", "exit status 0"},
			present: []string{"sub/inside.txt"}},
		{name: "outside_not_writable", line: fmt.Sprintf("echo x > %s/out.txt; echo x > %s; echo x > %s; echo done", outside, hostHome, hostTmp),
			want: []string{"done\n"}, absent: []string{filepath.Join(outside, "out.txt"), hostHome, hostTmp}, controlled: true},
		{name: "system_read_only", line: fmt.Sprintf("touch %s %s && echo wrote || echo refused", hostSys[0], hostSys[1]),
			want: []string{"refused\n"}, absent: hostSys},
		{name: "host_dirs_hidden", line: "for d in /root /var /run /sys /srv; do test -e $d && echo visible $d; done; ls -A /home | grep -vx sandbox | sed 's/^/visible home: /'; echo done",
			want: []string{"done\n"}, notWant: []string{"visible"}},
		{name: "read_only_paths_and_hidden", line: fmt.Sprintf("cat %[1]s/visible.txt; cat %[1]s/secret/token; echo x > %[1]s/new.txt", ro),
			want: []string{"visible-content\n"}, notWant: []string{"secret-token"}, absent: []string{filepath.Join(ro, "new.txt")}},
		{name: "setsid_escape_killed", line: "setsid sleep 1000.5151 & echo started", want: []string{"started\n"}},
	}
	o := Options{Sandbox: SandboxBwrap, Bwrap: bwrap, ReadOnlyPaths: []string{ro}, HidePaths: []string{filepath.Join(ro, "secret")}}
	c := mustShell(t, o)
	if d := c.Spec().Description; d != "Run a shell command, offline" {
		t.Errorf("description %q; want it to say the network is off", d)
	}
	if b, err := CheckSandbox(o); b != bwrap || err != nil {
		t.Errorf("CheckSandbox = %q, %v; want %q", b, err, bwrap)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := workspace(t)
			got := mustRun(t, c, ws, tt.line, 20*time.Second)
			checkResult(t, got, "", tt.want, tt.notWant)
			for _, p := range tt.absent {
				if _, err := os.Lstat(p); err == nil {
					t.Errorf("the sandbox wrote %s on the host", p)
				}
			}
			for _, p := range tt.present {
				if _, err := os.Stat(filepath.Join(ws, p)); err != nil {
					t.Errorf("workspace write lost: %v", err)
				}
			}
			if tt.controlled {
				ctl, _ := run(context.Background(), t, mustShell(t, Options{Sandbox: SandboxNone}), workspace(t), shellLine(tt.line), 20*time.Second)
				for _, w := range tt.want {
					if strings.Contains(ctl, w) && w != "done\n" {
						t.Errorf("unsandboxed control also gives %q, so the case proves nothing:\n%s", w, ctl)
					}
				}
				for _, p := range tt.absent {
					if _, err := os.Lstat(p); err != nil {
						t.Errorf("unsandboxed control did not write %s, so the case proves nothing", p)
					}
					os.Remove(p)
				}
			}
			waitGone(t, "1000.5151")
		})
	}
	if accepted.Load() != 1 {
		t.Errorf("the listener accepted %d connections; want 1, the unsandboxed control's", accepted.Load())
	}
}

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
	// Only the process bound's case has a small one: without a box it bounds every process
	// of the sandbox's uid on the host, other tests' sandboxes too, which would leave the
	// other probes unable to fork.
	o := Options{Sandbox: SandboxBwrap, Bwrap: bwrap, Limits: Limits{FileSize: 1 << 20, Tmp: 8 << 20}}
	c := mustShell(t, o)
	o.Limits.Procs = 24
	fewProcs := mustShell(t, o)
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
	// ring sets up an io_uring of 4 entries with io_uring_setup(2), by its number here.
	ring := fmt.Sprintf(`import ctypes
libc = ctypes.CDLL(None, use_errno=True)
r = libc.syscall(%d, 4, ctypes.create_string_buffer(120))
print("io_uring usable" if r >= 0 else "io_uring refused")`, unix.SYS_IO_URING_SETUP)
	// aio sets up a Linux AIO context with io_setup(2), by its number here.
	aio := fmt.Sprintf(`import ctypes
libc = ctypes.CDLL(None, use_errno=True)
ctx = ctypes.c_ulong(0)
r = libc.syscall(%d, 4, ctypes.byref(ctx))
print("aio usable" if r >= 0 else "aio refused")`, unix.SYS_IO_SETUP)
	tests := []struct {
		name    string
		line    string
		want    []string
		notWant []string
		rootCtl bool // as root, the unsandboxed control must not give all of want
		procs   bool // run with the small process bound
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
		{name: "processes_bounded", line: `python3 -c '` + forks + `'`, want: []string{"forked "}, notWant: []string{"forked 40"}, procs: true},
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
		// A ring holds registered files and requests where the disk watch's /proc scan
		// does not look.
		{name: "no_io_uring", line: `python3 -c '` + ring + `'`, want: []string{"io_uring refused"},
			notWant: []string{"io_uring usable"}, rootCtl: true},
		// An AIO poll in flight keeps the socket it polls, and what waits in its queue,
		// after its last descriptor is closed.
		{name: "no_linux_aio", line: `python3 -c '` + aio + `'`, want: []string{"aio refused"},
			notWant: []string{"aio usable"}, rootCtl: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := workspace(t)
			sh := c
			if tt.procs {
				sh = fewProcs
			}
			got := mustRun(t, sh, ws, tt.line, 30*time.Second)
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
	got := mustRun(t, c, ws, `env -0 | tr '\0' '\n' | cut -d= -f1 | sort | tr '\n' ' '`, time.Minute)
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

// TestOwnTreeCostIsLinear checks that the chown walk before a run as root costs in
// proportion to what the workspace holds, however deep: a chain of folders the agent's
// shell made 2000 levels down must not make the daemon (as root, before every command,
// outside the command's timeout) resolve every path again from the workspace's top.
func TestOwnTreeCostIsLinear(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the workspace is chowned only when agentd runs as root")
	}
	tests := []struct {
		name  string
		depth int
		files int // in the deepest folder
	}{
		{name: "deep_chain", depth: 2000},
		{name: "deep_chain_with_files", depth: 1000, files: 50},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := workspace(t)
			fd, err := unix.Open(ws, unix.O_DIRECTORY|unix.O_RDONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < tt.depth; i++ {
				if err := unix.Mkdirat(fd, "d", 0o755); err != nil {
					t.Fatal(err)
				}
				next, err := unix.Openat(fd, "d", unix.O_DIRECTORY|unix.O_RDONLY, 0)
				unix.Close(fd)
				if err != nil {
					t.Fatal(err)
				}
				fd = next
			}
			for i := 0; i < tt.files; i++ {
				f, err := unix.Openat(fd, "f"+string(rune('a'+i%26))+string(rune('a'+i/26)), unix.O_CREAT|unix.O_WRONLY, 0o644)
				if err != nil {
					t.Fatal(err)
				}
				unix.Close(f)
			}
			unix.Close(fd)
			root, err := os.OpenRoot(ws)
			if err != nil {
				t.Fatal(err)
			}
			defer root.Close()
			start := time.Now()
			if err := ownTree(root, DefaultUID, DefaultUID); err != nil {
				t.Fatal(err)
			}
			if took := time.Since(start); took > 3*time.Second {
				t.Errorf("ownTree took %v on a chain %d deep; want it linear", took, tt.depth)
			}
			// Everything was given away, the deepest folder's files included.
			err = filepath.WalkDir(ws, func(p string, d os.DirEntry, err error) error {
				if err != nil {
					return nil // beyond PATH_MAX for a path walk: checked below by descriptor
				}
				if st := statOf(t, p); st.Uid != DefaultUID {
					t.Errorf("%s is owned by %d", p[len(ws):], st.Uid)
					return filepath.SkipAll
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestNoInheritedDescriptors checks that a program gets only its stdin, stdout and stderr
// (and what the sandbox itself hands bwrap), never a descriptor the daemon holds open
// without close-on-exec: one it inherited from whatever started it (a shell script, a
// supervisor), or one a library opened so. Such a descriptor could be the database, a
// socket or a log, open for writing past every mount the sandbox makes.
func TestNoInheritedDescriptors(t *testing.T) {
	canary := filepath.Join(t.TempDir(), "inherited-canary")
	if err := os.WriteFile(canary, []byte("secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fd, err := syscall.Open(canary, syscall.O_RDWR, 0) // no O_CLOEXEC, as an inherited one
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	high := 200
	if err := syscall.Dup2(fd, high); err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(high)
	tests := []struct {
		name string
		line string
	}{
		{name: "shell_fd_table", line: `ls -l /proc/$$/fd/`},
		{name: "read_by_number", line: `cat <&200; echo status=$?`},
		{name: "child_fd_table", line: `sh -c 'ls -l /proc/self/fd/'`},
	}
	for _, mode := range modes(t) {
		for _, tt := range tests {
			t.Run(mode+"/"+tt.name, func(t *testing.T) {
				got, err := run(context.Background(), t, mustShell(t, Options{Sandbox: mode}), workspace(t), shellLine(tt.line), 30*time.Second)
				if err != nil {
					t.Fatalf("error %v; output:\n%s", err, got)
				}
				for _, leak := range []string{"inherited-canary", "secret", " 200 ->", fmt.Sprintf(" %d ->", fd)} {
					if strings.Contains(got, leak) {
						t.Errorf("the program inherited the daemon's descriptor (%q):\n%s", leak, got)
					}
				}
			})
		}
	}
}
