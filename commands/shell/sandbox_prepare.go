package shell

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/agentd/agentd/commands"
)

// binds are the workspace paths a run binds over the workspace, absolute: pin are
// folders bound onto themselves read-write, so that they cannot be renamed or removed
// inside (a mount point cannot be), and ro are bound read-only. configs are the git
// config files of ro that no other name (a hard link) lets a program change.
type binds struct{ pin, ro, configs []string }

// repoDepth is how deep under the workspace repositories are looked for: the workspace
// itself and two levels down. maxRepos bounds the work on a workspace full of them.
const (
	repoDepth = 2
	maxRepos  = 32
)

// helpersDir is the folder of helper agents' workspaces, <workspace>/agents/NAME.
const helpersDir = commands.HelpersFolder

// gitExecuted are the files and folders of a .git that git executes code from or is
// configured by; the sandbox makes them read-only.
var gitExecuted = []string{"hooks", "config", "config.worktree"}

// prepare readies the workspace, open as root (commands.OpenWorkspace), for a sandboxed
// run: as root, it gives the tree to the sandbox's uid; and it finds what the run must
// protect. Nothing of the agent's runs in it meanwhile (its helpers run in agents/, left
// alone), so what is found stays true until bwrap binds it.
func (s *sandbox) prepare(root *os.Root) (binds, error) {
	ws := root.Name()
	if s.asRoot {
		if err := ownTree(root, s.o.UID, s.o.GID); err != nil {
			return binds{}, err
		}
	}
	b := protected(root)
	for i, p := range b.pin {
		b.pin[i] = filepath.Join(ws, p)
	}
	for i, p := range b.ro {
		b.ro[i] = filepath.Join(ws, p)
	}
	for i, p := range b.configs {
		b.configs[i] = filepath.Join(ws, p)
	}
	return b, nil
}

// openSources opens, beneath the workspace's root, what the mounts bind from the host,
// in their order. bwrap binds each by its descriptor (--bind-fd: the folder's path as the
// kernel names it now, then checked to be the descriptor's folder, or bwrap fails), so a
// link swapped in on the way after the checks (the workspace's own folder or a parent's,
// a helper's agents/NAME) cannot redirect a bind as a path would. A source that is now a
// link is refused.
func openSources(root *os.Root, mounts []mount) ([]*os.File, error) {
	var out []*os.File
	for _, m := range mounts {
		if !m.sourced() {
			continue
		}
		rel, err := filepath.Rel(root.Name(), m.path)
		if err == nil {
			var f *os.File
			if f, err = root.OpenFile(rel, unix.O_PATH|unix.O_NOFOLLOW, 0); err == nil {
				out = append(out, f)
				var st unix.Stat_t
				if err = unix.Fstat(int(f.Fd()), &st); err == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
					err = fmt.Errorf("%s is now a symlink", rel)
				}
			}
		}
		if err != nil {
			closeAll(out)
			return nil, fmt.Errorf("the workspace changed while it was prepared (run the command again): %w", err)
		}
	}
	return out, nil
}

// ownTree gives every file and folder under root, the root included, to uid and gid,
// never following a symlink and never through a file with more than one link (it may be
// a file of the host's, hard-linked in). agents/ is skipped: each helper's own runs own
// its workspace, and here it is read-only.
//
// It walks by descriptor, each folder opened from its parent's (O_NOFOLLOW) and each name
// changed there (AT_SYMLINK_NOFOLLOW): the cost is linear in the tree however deep the
// agent made it, where resolving every path again from the top was quadratic (a chain
// 2000 folders deep cost the daemon half a minute before each command). Folders deeper
// than maxOwnDepth, where no file command can reach, are left as they are.
func ownTree(root *os.Root, uid, gid int) error {
	top, err := root.Open(".")
	if err != nil {
		return err
	}
	defer top.Close()
	fd := int(top.Fd())
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if int(st.Uid) != uid || int(st.Gid) != gid {
		if err := unix.Fchown(fd, uid, gid); err != nil {
			return fmt.Errorf("cannot give the workspace to uid %d: %w", uid, err)
		}
	}
	w := &owner{uid: uid, gid: gid}
	w.folder(top, 0)
	return nil
}

// maxOwnDepth bounds the folders ownTree descends, each holding a descriptor meanwhile:
// file commands take paths of at most 4096 bytes, so reach no deeper than 2048.
const maxOwnDepth = 2048

// owner is one ownTree walk.
type owner struct{ uid, gid int }

// folder gives away what dir holds, descending into its folders. Whatever cannot be read
// or changed is left as it is.
func (w *owner) folder(dir *os.File, depth int) {
	fd := int(dir.Fd())
	for {
		entries, err := dir.ReadDir(256)
		for _, e := range entries {
			name := e.Name()
			if depth == 0 && name == helpersDir && e.IsDir() {
				continue
			}
			var st unix.Stat_t
			if unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
				continue
			}
			isDir := st.Mode&unix.S_IFMT == unix.S_IFDIR
			if (int(st.Uid) != w.uid || int(st.Gid) != w.gid) && (isDir || st.Nlink <= 1) {
				unix.Fchownat(fd, name, w.uid, w.gid, unix.AT_SYMLINK_NOFOLLOW)
			}
			if !isDir || depth+1 >= maxOwnDepth {
				continue
			}
			sub, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err != nil {
				continue
			}
			f := os.NewFile(uintptr(sub), name)
			w.folder(f, depth+1)
			f.Close()
		}
		if err != nil || len(entries) == 0 {
			return
		}
	}
}

// protected finds, relative to root, what a run must pin and make read-only: agents/,
// and in every repository down to repoDepth its .git's hooks and config, with each folder
// from the workspace down to that .git pinned so that none can be swapped for a lookalike.
// Only real folders and files count: a symlink would be bound as its target.
func protected(root *os.Root) binds {
	var b binds
	if isDir(root, helpersDir) {
		b.ro = append(b.ro, helpersDir)
	}
	pinned := map[string]bool{}
	repos := 0
	var walk func(dir string, depth int)
	walk = func(dir string, depth int) {
		if repos >= maxRepos {
			return
		}
		if git := path.Join(dir, ".git"); isDir(root, git) {
			repos++
			var chain []string // parents first: a bind over a parent would cover its child's
			for d := dir; d != "."; d = path.Dir(d) {
				chain = append([]string{d}, chain...)
			}
			for _, d := range append(chain, git) {
				pin(&b, pinned, d)
			}
			protectGit(root, &b, git)
		}
		if depth == repoDepth {
			return
		}
		entries, err := fs.ReadDir(root.FS(), dir)
		if err != nil {
			return
		}
		for _, e := range entries {
			if e.IsDir() && e.Name() != ".git" && !(dir == "." && e.Name() == helpersDir) {
				walk(path.Join(dir, e.Name()), depth+1)
			}
		}
	}
	walk(".", 0)
	return b
}

// protectGit makes the files git executes or obeys read-only, creating an empty hooks folder
// so that one cannot be made during the run.
func protectGit(root *os.Root, b *binds, git string) {
	hooks := path.Join(git, "hooks")
	if _, err := root.Lstat(hooks); errors.Is(err, fs.ErrNotExist) {
		root.Mkdir(hooks, 0o755)
	}
	for _, name := range gitExecuted {
		p := path.Join(git, name)
		fi, err := root.Lstat(p)
		if err == nil && (fi.IsDir() || fi.Mode().IsRegular()) {
			b.ro = append(b.ro, p)
		}
		if err == nil && name != "hooks" && fi.Mode().IsRegular() && linkCount(fi) == 1 {
			b.configs = append(b.configs, p)
		}
	}
}

func pin(b *binds, pinned map[string]bool, p string) {
	if !pinned[p] {
		pinned[p] = true
		b.pin = append(b.pin, p)
	}
}

// isDir reports whether p is a real folder under root, not a symlink to one.
func isDir(root *os.Root, p string) bool {
	fi, err := root.Lstat(p)
	return err == nil && fi.IsDir()
}
