package shell

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/agentd/agentd/commands"
)

// view is what one run's programs see of the workspace: the binds prepare found, the
// paths the permission rules deny, and what the run's profile takes away.
type view struct {
	binds
	denied
	git      boundGit // a bounded run's: git reached through the script (zero: none)
	readOnly bool     // the workspace is bound read-only: a bounded run without +write
	offline  bool     // no network, whatever the options grant: a bounded run
	// at is where the programs see the workspace, when not at its own path (an effect
	// preview's copy, bound where the workspace it copies is).
	at string
	// src are the host folders and files the mounts bind, open: openSources.
	src []*os.File
}

// inside is where the host path p, the workspace or beneath it, is bound in the sandbox.
func (v view) inside(workspace, p string) string {
	if v.at == "" || v.at == workspace {
		return p
	}
	if rel, err := filepath.Rel(workspace, p); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
		return filepath.Join(v.at, rel)
	}
	return p
}

// wrap returns argv to run in workspace under the sandbox, as v shows it.
func (s *sandbox) wrap(workspace string, v view, argv []string) []string {
	if s.bwrap == "" {
		return argv
	}
	a := append([]string{s.bwrap}, s.bwrapArgs(workspace, v)...)
	if pid := commands.ViewNamespace(workspace); pid != "" {
		// The workspace is what another mount namespace shows at its path, and bwrap binds it
		// by the path its descriptor reads as there: bwrap runs in that namespace, and in the
		// user namespace that owns it, keeping agentd's uid (mapped to itself there).
		a = append([]string{nsenterPath, "--target=" + pid, "--user", "--mount", "--preserve-credentials", "--"}, a...)
	}
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

// bwrapArgs builds the sandbox: its own network, pid, ipc, uts and cgroup namespaces (a
// loopback of its own, and slirp4netns's way out when the network is granted: netArgs), killed with its parent, a new session
// (no terminal to inject input into), the system and the root read-only, fresh /proc
// and a read-only /dev, a bounded /tmp, /dev/shm and an empty HOME of its own, the workspace read-write
// at its own path as the only other writable place (less what v pins, makes read-only or hides; all of it
// read-only in a bounded run), and nothing else of the host: no /home, /root, /run, /var
// or /sys. Each bind of the workspace is by the descriptor of what was checked (v.src),
// never by its path. An empty workspace leaves it out (the probe).
//
// The environment is not set here (--clearenv, --setenv) but given to bwrap already
// scrubbed: its argv, unlike its environment, is readable by every user of the host.
func (s *sandbox) bwrapArgs(workspace string, v view) []string {
	a := []string{"--die-with-parent", "--new-session", "--unshare-net",
		"--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try", "--hostname", "sandbox"}
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
		"--perms", "1777", "--size", tmp, "--tmpfs", "/tmp", "--perms", "1777", "--size", tmp, "--tmpfs", "/dev/shm",
		"--perms", "1777", "--size", tmp, "--tmpfs", sandboxHome)
	fd := 3 // the first of the files, in their order
	if seccompArch != 0 {
		fd++
	}
	if v.git.real != "" {
		a = v.git.args(a, bound, fd)
		fd += len(v.git.over)
	}
	srcFD := fd // the workspace's sources, in the order of v.mounts
	fd += len(v.src)
	if s.online(v) {
		a = netArgs(a, bound, fd)
	}
	bound = append(bound, s.o.ReadOnlyPaths...)
	for _, p := range s.o.ReadOnlyPaths {
		a = append(dirsTo(a, p, bound), "--ro-bind", p, p)
	}
	if workspace != "" {
		a = v.workspaceArgs(dirsTo(a, v.inside(workspace, workspace), bound), workspace, srcFD)
	} else {
		a = append(a, "--chdir", "/")
	}
	// Last, so that nothing bound above uncovers them.
	for _, h := range s.hide {
		fi, err := os.Stat(h)
		switch {
		case err != nil:
		case fi.IsDir():
			a = emptyDir(a, h)
		default:
			a = append(a, "--ro-bind", "/dev/null", h)
		}
	}
	// The root and /dev bwrap makes are tmpfs without a bound, which a sandbox of a daemon
	// that is not root owns: read-only once everything is mounted on them. The remount is
	// not recursive, so /dev/shm stays a bounded writable tmpfs and the devices bound in
	// /dev (null, zero, urandom, tty) stay writable devices.
	return append(a, "--remount-ro", "/dev", "--remount-ro", "/")
}

// workspaceArgs appends the mounts of workspace (v.mounts), each host path bound by its
// descriptor (v.src, from srcFD on), and starts the program there.
func (v view) workspaceArgs(a []string, workspace string, srcFD int) []string {
	in := func(p string) string { return v.inside(workspace, p) }
	n := 0 // the sources bound so far
	for _, m := range v.mounts(workspace) {
		switch m.kind {
		case "dir":
			a = emptyDir(a, in(m.path))
		case "file":
			a = append(a, "--ro-bind", "/dev/null", in(m.path))
		case "fixed":
			a = append(a, "--bind-fd", strconv.Itoa(srcFD+n), in(m.path))
			n++
		default:
			a = append(a, "--ro-bind-fd", strconv.Itoa(srcFD+n), in(m.path))
			n++
		}
	}
	return append(a, "--chdir", in(workspace))
}

// emptyDir appends an empty read-only folder at p, hiding what is there.
func emptyDir(a []string, p string) []string {
	return append(a, "--perms", "0555", "--size", "4096", "--tmpfs", p, "--remount-ro", p)
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
	return slices.ContainsFunc(roots, func(r string) bool { return d == r || strings.HasPrefix(d, r+"/") })
}

// mount is one mount a run makes of its workspace: kind "fixed" binds the host folder at
// path writable onto itself, "ro" read-only, "dir" hides a folder under an empty read-only
// tmpfs and "file" a file under /dev/null.
type mount struct{ path, kind string }

// sourced reports whether m binds a host path, opened beforehand (openSources).
func (m mount) sourced() bool { return m.kind == "fixed" || m.kind == "ro" }

// mounts lists what a run makes of workspace, in bwrap's order: the workspace itself,
// writable or not, then what v pins, makes read-only or hides. The protected paths and
// the deny rules' binds are one list, ordered as denied.ops says: a folder pinned or
// fixed by a rule must not uncover a read-only bind inside it.
func (v view) mounts(workspace string) []mount {
	d := v.denied
	d.ro = slices.Concat(v.binds.ro, d.ro)
	top := mount{workspace, "fixed"}
	if v.readOnly {
		top.kind = "ro"
		d.fixed = nil // nothing moves in a read-only workspace; a writable bind would undo it
	} else {
		d.fixed = slices.Concat(v.pin, d.fixed)
	}
	return append([]mount{top}, d.ops()...)
}

// ops lists the mounts that keep what d holds from programs, a folder before what lies
// in it so that nothing bound later is uncovered by an earlier one: hidden folders are an
// empty read-only tmpfs, hidden files /dev/null, fixed folders bound writable onto
// themselves, and the rest bound read-only onto itself. A fixed folder at or inside one
// that is read-only or hidden is left out: nothing there can be renamed anyway, and its
// writable bind would uncover what the read-only one keeps. On one path the writable
// bind goes first, so the read-only or hidden one is what stays.
func (d denied) ops() []mount {
	var ops []mount
	kept := slices.Concat(d.dirs, d.ro)
	for _, p := range d.fixed {
		if !within(p, kept) {
			ops = append(ops, mount{p, "fixed"})
		}
	}
	for _, p := range d.ro {
		ops = append(ops, mount{p, "ro"})
	}
	for _, p := range d.files {
		ops = append(ops, mount{p, "file"})
	}
	for _, p := range d.dirs {
		ops = append(ops, mount{p, "dir"})
	}
	sort.SliceStable(ops, func(i, j int) bool { return ops[i].path < ops[j].path })
	return ops
}
