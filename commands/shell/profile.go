package shell

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/agentd/agentd/commands"
)

// sandboxHome is HOME inside the sandbox: an empty tmpfs of each run's own, so that no
// program finds a dotfile the agent wrote (.curlrc, .wgetrc, .npmrc, .netrc, pip.conf,
// .gitconfig, .inputrc, ...). The workspace is never HOME.
const sandboxHome = "/home/sandbox"

// boundedGitConfig are git settings given in its command-line scope, which no
// repository's config overrides, for a bounded run: every single-valued key that names a
// program git runs is set to one that runs nothing the agent chose, however git found the
// repository (a .git folder, a gitfile, commondir, a worktree, a nested repository). The
// drivers a repository names itself (filter.NAME.clean, diff.NAME.textconv,
// merge.NAME.driver), and diff.external, which set to anything runs (or fails) every git
// diff, are the bounded run's git's to set off where the config names them (gitbound.sh);
// git reads no system config, and no global one.
var boundedGitConfig = [][2]string{
	{"safe.bareRepository", "explicit"},
	{"core.fsmonitor", "false"},
	{"core.hooksPath", "/dev/null"},
	{"core.pager", "cat"},
	{"core.editor", "false"},
	{"sequence.editor", "false"},
	{"core.sshCommand", "false"},
	{"core.gitProxy", "false"},
	{"core.askPass", "false"},
	{"core.alternateRefsCommand", "false"},
	{"credential.helper", ""},
	{"gpg.program", "false"},
	{"gpg.ssh.program", "false"},
	{"gpg.x509.program", "false"},
	{"gpg.ssh.defaultKeyCommand", "false"},
	{"interactive.diffFilter", "cat"},
	{"protocol.allow", "never"},
	// A repository's protocol.NAME.allow overrides protocol.allow, but not these; and
	// GIT_ALLOW_PROTOCOL (env) overrides both, so no transport runs a program it names.
	{"protocol.file.allow", "never"},
	{"protocol.ext.allow", "never"},
	{"protocol.ssh.allow", "never"},
	{"protocol.git.allow", "never"},
	{"protocol.fd.allow", "never"},
}

// boundedGitKeys are the only keys a bounded run's git takes from a repository's config
// (its local and worktree config; an include is none of them): those git writes itself for
// the commands a pattern may approve (init, clone, remote, branch, sparse-checkout,
// submodule init) and a few of how it works, each one's value a name, a number, a switch
// or an address — never a program, a path to one, or another file to read. A repository
// setting any other key is refused (gitbound.sh), so a key a newer git adds that names a
// program (gc.recentObjectsHook) is refused before anyone lists it. Each is a pattern of
// sh's case, lowercase as git config --list gives section and key; NAME is *. An address
// (remote.NAME.url: ext::, fd::) reaches only the transports GIT_ALLOW_PROTOCOL allows.
var boundedGitKeys = []string{
	"core.repositoryformatversion", "core.bare", "core.filemode", "core.logallrefupdates",
	"core.ignorecase", "core.precomposeunicode", "core.symlinks", "core.autocrlf", "core.eol",
	"core.safecrlf", "core.sparsecheckout", "core.sparsecheckoutcone",
	"extensions.objectformat", "extensions.worktreeconfig", "extensions.refstorage",
	"init.defaultbranch", "user.name", "user.email",
	"remote.*.url", "remote.*.pushurl", "remote.*.fetch", "remote.*.push", "remote.*.tagopt",
	"remote.*.prune", "remote.*.mirror",
	"branch.*.remote", "branch.*.merge", "branch.*.pushremote", "branch.*.description",
	"submodule.*.url", "submodule.*.active", "submodule.*.branch",
	"pull.rebase", "pull.ff", "merge.ff", "fetch.prune", "push.default", "push.autosetupremote",
}

// boundedEnv are the variables of a bounded run: git's settings above, and python
// without the current or the script's folder on its import path (`python3 -m json.tool`
// would import a json/ package the agent wrote).
var boundedEnv = append(gitConfigEnv(boundedGitConfig), "GIT_CONFIG_NOSYSTEM=1", "PYTHONSAFEPATH=1")

// maxDenyWalk bounds the entries looked at to find the paths the rules deny; a workspace
// with more under the rules' folders cannot be checked, and the command is refused.
const maxDenyWalk = 50_000

// denied are the workspace paths, absolute, the permission rules keep from a run's programs.
type denied struct {
	dirs, files []string // hidden: an empty read-only folder, /dev/null
	ro          []string // kept from writing: bound read-only
	fixed       []string // bound onto themselves, writable: no rename or rmdir moves them
}

func (d denied) empty() bool { return len(d.dirs)+len(d.files)+len(d.ro)+len(d.fixed) == 0 }

// findDenied walks the folders of the workspace (root) the rules name (never following a link) and lists
// what they deny. A file the rules hide or keep from writing that has other hard links is
// kept so under each of its names, found by a walk of the whole workspace. The folder
// holding what a write deny could match is read-only whole, and the folders leading to it
// are fixed in place, so a file created or a folder renamed there later is kept too. Past
// maxDenyWalk entries it fails: a rule the sandbox cannot enforce refuses the command, it
// is never half-kept.
func findDenied(root *os.Root, rules commands.PathRules) (denied, error) {
	var d denied
	if rules == nil {
		return d, nil
	}
	w := &denyWalk{root: root, rules: rules, ws: root.Name(), seen: map[string]bool{}, inodes: map[[2]uint64]bool{}}
	for _, r := range rules.Roots() {
		if err := w.walk(r); err != nil {
			return denied{}, err
		}
	}
	for _, r := range rules.WriteRoots() {
		w.hold(r)
	}
	if len(w.inodes) > 0 { // hidden files with other names: find them everywhere
		w.linksOnly = true
		if err := w.walk("."); err != nil {
			return denied{}, err
		}
	}
	return w.d, nil
}

// denyWalk is one findDenied.
type denyWalk struct {
	root      *os.Root
	rules     commands.PathRules
	ws        string
	d         denied
	n         int
	seen      map[string]bool
	inodes    map[[2]uint64]bool // dev, inode of kept files with more than one link: true hidden, false read-only
	linksOnly bool               // the second walk: keep other names of those inodes only
}

// hold makes folder rel read-only and fixes in place the real folders leading to it. The
// workspace itself is a mount point already; a folder not there yet, or reached through
// a link, is left to the check of the step's change.
func (w *denyWalk) hold(rel string) {
	if rel == "." {
		return
	}
	parts := strings.Split(rel, "/")
	for i := range parts {
		p := strings.Join(parts[:i+1], "/")
		abs := filepath.Join(w.ws, filepath.FromSlash(p))
		if fi, err := w.root.Lstat(p); err != nil || !fi.IsDir() || w.seen[abs] {
			return // missing, a link, a file, or kept whole already
		}
		if i == len(parts)-1 {
			w.seen[abs] = true
			w.d.ro = append(w.d.ro, abs)
		} else if !slices.Contains(w.d.fixed, abs) {
			w.d.fixed = append(w.d.fixed, abs)
		}
	}
}

func (w *denyWalk) walk(rel string) error {
	fi, err := w.root.Lstat(rel)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // nothing there to keep
	} else if err != nil {
		return err
	}
	return w.visit(rel, fi)
}

func (w *denyWalk) visit(rel string, fi fs.FileInfo) error {
	if w.n++; w.n > maxDenyWalk {
		return w.tooMany()
	}
	abs := filepath.Join(w.ws, filepath.FromSlash(rel))
	if fi.Mode()&fs.ModeSymlink != 0 {
		return nil // where it leads is kept (or not) under its own path
	}
	switch {
	case w.linksOnly && fi.IsDir() && slices.Contains(w.d.dirs, abs):
		return nil // hidden whole already
	case w.linksOnly:
		if st, ok := inode(fi); ok && fi.Mode().IsRegular() && !w.seen[abs] {
			if hide, kept := w.inodes[st]; kept && hide {
				w.seen[abs] = true
				w.d.files = append(w.d.files, abs)
			} else if kept {
				w.seen[abs] = true
				w.d.ro = append(w.d.ro, abs)
			}
		}
	case w.seen[abs]:
	default:
		read, write := w.rules.Deny(rel)
		switch {
		case read && fi.IsDir(): // denied by name or whole: it shows empty
			w.seen[abs] = true
			w.d.dirs = append(w.d.dirs, abs)
			return w.linked(rel)
		case read && fi.Mode().IsRegular():
			w.seen[abs] = true
			w.d.files = append(w.d.files, abs)
			if st, ok := inode(fi); ok && linkCount(fi) > 1 {
				w.inodes[st] = true
			}
			return nil
		case write && (fi.IsDir() || fi.Mode().IsRegular()):
			w.seen[abs] = true
			w.d.ro = append(w.d.ro, abs) // a folder's files may still be hidden: look inside
			if st, ok := inode(fi); ok && fi.Mode().IsRegular() && linkCount(fi) > 1 && !w.inodes[st] {
				w.inodes[st] = false
			}
		}
	}
	if !fi.IsDir() {
		return nil
	}
	entries, err := fs.ReadDir(w.root.FS(), rel)
	if err != nil {
		return nil // unreadable: no program of the agent's reads it either
	}
	for _, e := range entries {
		child := path.Join(rel, e.Name())
		if rel == "." && e.Name() == helpersDir && e.IsDir() {
			continue // helpers' workspaces are read-only here and obey their own rules
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		if err := w.visit(child, info); err != nil {
			return err
		}
	}
	return nil
}

// linked notes the files under folder rel that have other hard links, whose other names
// must be hidden too.
func (w *denyWalk) linked(rel string) error {
	return fs.WalkDir(w.root.FS(), rel, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if w.n++; w.n > maxDenyWalk {
			return w.tooMany()
		}
		if e.Type().IsRegular() {
			if fi, err := e.Info(); err == nil && linkCount(fi) > 1 {
				if st, ok := inode(fi); ok {
					w.inodes[st] = true
				}
			}
		}
		return nil
	})
}

func (w *denyWalk) tooMany() error {
	return fmt.Errorf("the workspace has more than %d entries where the deny rules %s could match: "+
		"narrow those rules to a folder, or remove files, so that programs can be kept from what they deny", maxDenyWalk, w.rules.String())
}

// refuseUnconfined is why a command is refused without a sandbox: its profile or the path
// rules need one, and nothing runs unconfined that was not meant to.
func refuseUnconfined(name string, p commands.Profile, d denied) error {
	if p.Bounded {
		return fmt.Errorf("%s: refused: it was approved by a pattern, and what a pattern approves runs only "+
			"in a sandbox that holds the workspace read-only and the network off; with [shell] sandbox = \"none\" "+
			"there is none. Tell the person: approve it yourself (y), or enable the sandbox", name)
	}
	what := slices.Concat(d.dirs, d.files, d.ro, d.fixed)
	return fmt.Errorf("%s: refused: the deny rules %s cover %s, and without a sandbox ([shell] sandbox = \"none\") "+
		"programs cannot be kept from it. Tell the person: enable the sandbox, or change the rules", name, p.Paths.String(), what[0])
}

// inode is fi's device and inode number.
func inode(fi fs.FileInfo) ([2]uint64, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return [2]uint64{}, false
	}
	return [2]uint64{uint64(st.Dev), st.Ino}, true
}

// linkCount is fi's number of hard links, 1 when unknown.
func linkCount(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}
