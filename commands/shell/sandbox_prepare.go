package shell

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"syscall"
)

// binds are the workspace paths a run binds over the workspace, absolute: pin are
// folders bound onto themselves read-write, so that they cannot be renamed or removed
// inside (a mount point cannot be), and ro are bound read-only.
type binds struct{ pin, ro []string }

// repoDepth is how deep under the workspace repositories are looked for: the workspace
// itself and two levels down. maxRepos bounds the work on a workspace full of them.
const (
	repoDepth = 2
	maxRepos  = 32
)

// helpersDir is the folder of helper agents' workspaces, <workspace>/agents/NAME.
const helpersDir = "agents"

// gitExecuted are the files and folders of a .git that git executes code from or is
// configured by; the sandbox makes them read-only.
var gitExecuted = []string{"hooks", "config", "config.worktree"}

// prepare readies workspace ws for a sandboxed run: as root, it gives the tree to the
// sandbox's uid; and it finds what the run must protect. Nothing of the agent's runs in
// ws meanwhile (its helpers run in agents/, left alone), so what is found stays true
// until bwrap binds it.
func (s *sandbox) prepare(ws string) (binds, error) {
	root, err := os.OpenRoot(ws)
	if err != nil {
		return binds{}, err
	}
	defer root.Close()
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
	return b, nil
}

// ownTree gives every file and folder under root, the root included, to uid and gid,
// never following a symlink and never through a file with more than one link (it may be
// a file of the host's, hard-linked in). agents/ is skipped: each helper's own runs own
// its workspace, and here it is read-only.
func ownTree(root *os.Root, uid, gid int) error {
	return fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == "." {
				return err
			}
			return nil // unreadable: leave it as it is
		}
		if p == helpersDir && d.IsDir() {
			return fs.SkipDir
		}
		fi, err := root.Lstat(p)
		if err != nil {
			return nil
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok || (int(st.Uid) == uid && int(st.Gid) == gid) || (!fi.IsDir() && st.Nlink > 1) {
			return nil
		}
		if err := root.Lchown(p, uid, gid); err != nil && p == "." {
			return fmt.Errorf("cannot give the workspace to uid %d: %w", uid, err)
		}
		return nil
	})
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
