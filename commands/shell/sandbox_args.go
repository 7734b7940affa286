package shell

import (
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// wrap returns argv to run in workspace under the sandbox, with b bound in it.
func (s *sandbox) wrap(workspace string, b binds, argv []string) []string {
	if s.bwrap == "" {
		return argv
	}
	a := append([]string{s.bwrap}, s.bwrapArgs(workspace, b)...)
	if s.asRoot {
		a = append(a, setprivPath,
			"--reuid="+strconv.Itoa(s.o.UID), "--regid="+strconv.Itoa(s.o.GID), "--clear-groups",
			"--inh-caps=-all", "--ambient-caps=-all", "--bounding-set=-all", "--no-new-privs", "--")
	}
	l := s.o.Limits
	a = append(a, prlimitPath)
	if !s.o.Boxes.has("pids") { // else the agent's box bounds its processes, and a bound per uid would be every agent's
		a = append(a, "--nproc="+strconv.Itoa(l.Procs))
	}
	a = append(a, "--data="+strconv.FormatInt(l.Memory, 10),
		"--fsize="+strconv.FormatInt(l.FileSize, 10), "--nofile="+strconv.Itoa(l.OpenFiles), "--core=0", "--")
	return append(a, argv...)
}

// bwrapArgs builds the sandbox: its own pid, ipc, uts and cgroup namespaces, and network
// unless granted (so only a loopback of its own), killed with its parent, a new session
// (no terminal to inject input into), the system read-only, fresh /proc and /dev, a
// bounded /tmp, the workspace read-write at its own path as the only other writable place
// (less what b pins and makes read-only), and nothing else of the host: no /home, /root,
// /run, /var or /sys. An empty workspace leaves it out (the probe).
//
// The environment is not set here (--clearenv, --setenv) but given to bwrap already
// scrubbed: its argv, unlike its environment, is readable by every user of the host.
func (s *sandbox) bwrapArgs(workspace string, b binds) []string {
	a := []string{"--die-with-parent", "--new-session",
		"--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try", "--hostname", "sandbox"}
	if !s.o.Network {
		a = append(a, "--unshare-net")
	}
	if !s.asRoot {
		a = append(a, "--unshare-user", "--disable-userns", "--cap-drop", "ALL")
	}
	if seccompArch != 0 {
		a = append(a, "--seccomp", seccompFD)
	}
	bound := []string{"/usr", "/etc", "/proc", "/dev"} // mounted with folders of their own
	a = append(a, "--ro-bind", "/usr", "/usr")
	for _, d := range []string{"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"} {
		fi, err := os.Lstat(d)
		switch {
		case err != nil:
		case fi.Mode()&fs.ModeSymlink != 0: // merged /usr: /bin -> usr/bin
			if target, err := os.Readlink(d); err == nil {
				a = append(a, "--symlink", target, d)
			}
		case fi.IsDir():
			a = append(a, "--ro-bind", d, d)
		}
		bound = append(bound, d)
	}
	tmp := strconv.FormatInt(s.o.Limits.Tmp, 10)
	a = append(a, "--ro-bind", "/etc", "/etc", "--proc", "/proc", "--dev", "/dev",
		"--perms", "1777", "--size", tmp, "--tmpfs", "/tmp", "--perms", "1777", "--size", tmp, "--tmpfs", "/dev/shm")
	bound = append(bound, s.o.ReadOnlyPaths...)
	for _, p := range s.o.ReadOnlyPaths {
		a = append(dirsTo(a, p, bound), "--ro-bind", p, p)
	}
	if workspace != "" {
		a = append(dirsTo(a, workspace, bound), "--bind", workspace, workspace)
		for _, p := range b.pin {
			a = append(a, "--bind", p, p)
		}
		for _, p := range b.ro {
			a = append(a, "--ro-bind", p, p)
		}
		a = append(a, "--chdir", workspace)
	} else {
		a = append(a, "--chdir", "/")
	}
	// Last, so that nothing bound above uncovers them.
	for _, h := range s.hide {
		fi, err := os.Stat(h)
		switch {
		case err != nil:
		case fi.IsDir():
			a = append(a, "--tmpfs", h)
		default:
			a = append(a, "--ro-bind", "/dev/null", h)
		}
	}
	return a
}

// dirsTo appends the folders leading to a bind at p, made 0755: bwrap would make them
// 0700 as root, and the sandbox's uid could not reach p. Those inside a bind already
// exist there with the host's permissions, and /tmp is 1777.
func dirsTo(a []string, p string, bound []string) []string {
	for _, d := range ancestors(p) {
		if d != "/tmp" && !within(d, bound) {
			a = append(a, "--perms", "0755", "--dir", d)
		}
	}
	return a
}

// ancestors lists the folders above p, from the top: "/a/b/c" gives "/a", "/a/b".
func ancestors(p string) []string {
	var out []string
	for d := filepath.Dir(p); d != "/" && d != "."; d = filepath.Dir(d) {
		out = append([]string{d}, out...)
	}
	return out
}

// within reports whether d is one of roots or inside one.
func within(d string, roots []string) bool {
	for _, r := range roots {
		if d == r || strings.HasPrefix(d, r+"/") {
			return true
		}
	}
	return false
}
