package commands

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
)

// Bounds on a workspace path, Linux's NAME_MAX and PATH_MAX.
const (
	maxNameBytes = 255
	maxPathBytes = 4096
)

// ErrBadPath marks a path refused because it is malformed or would leave the workspace.
var ErrBadPath = errors.New("path refused")

// pathError is a problem with one path the model gave, phrased for the model.
type pathError struct {
	path    string
	problem string
	err     error // ErrBadPath for refusals, or the fs error behind the problem
}

func (e *pathError) Error() string {
	p := e.path
	if len(p) > 80 { // a 4 KiB path would drown the message that refuses it
		p = p[:80] + "..."
	}
	return fmt.Sprintf("path %q %s", p, e.problem)
}

func (e *pathError) Unwrap() error { return e.err }

func badPath(p, format string, args ...any) error {
	return &pathError{path: p, problem: fmt.Sprintf(format, args...), err: ErrBadPath}
}

// ResolvePath returns the absolute path that the workspace-relative path p names, after
// checking that it stays inside workspace: p must be relative, free of NUL bytes, within
// NAME_MAX/PATH_MAX, and neither `..` nor any symlink along it (including the last
// component) may lead outside. An existing file with more than one hard link is refused:
// whatever reads or writes it reaches its other names too. The workspace itself must be
// reached through no symlink (OpenWorkspace). Symlinks that exist are resolved in the
// result; components that do not exist yet are kept as given. Errors wrap ErrBadPath and
// are phrased for the model.
//
// The check is only as good as the moment it ran: built-in commands also do the operation
// itself through an os.Root, which refuses to leave the workspace even if the tree changes.
func ResolvePath(workspace, p string) (string, error) {
	return resolvePath(workspace, p, false)
}

// ResolveWritePath is ResolvePath for a path that something other than the file commands
// is about to write (clone_repository's new folder): it also refuses, as write_file does,
// a path in a git folder, whose files git runs as code.
func ResolveWritePath(workspace, p string) (string, error) {
	return resolvePath(workspace, p, true)
}

func resolvePath(workspace, p string, write bool) (string, error) {
	root, ws, rel, err := openIn(workspace, p)
	if err != nil {
		return "", err
	}
	defer root.Close()
	if write {
		if err := refuseGitWrite(root, p, filepath.Clean(p), rel); err != nil {
			return "", err
		}
	}
	if fi, err := root.Lstat(rel); err == nil {
		if err := refuseHardLinked(p, fi); err != nil {
			return "", err
		}
	}
	return filepath.Join(ws, rel), nil
}

// refuseHardLinked refuses a non-folder with more than one name: another name may be
// outside the workspace, so reading or writing through this one would reach it.
func refuseHardLinked(p string, fi fs.FileInfo) error {
	if st, ok := statOf(fi); ok && !fi.IsDir() && st.Nlink > 1 {
		return badPath(p, "has %d hard links, and another may be outside the workspace, so it is not read "+
			"or written through; write_file replaces it with a file of its own, delete_file removes this name only", st.Nlink)
	}
	return nil
}

// CleanPath returns p as the cleaned, workspace-relative path every file command resolves
// ("./notes//a.txt" and "notes/../notes/a.txt" are "notes/a.txt"), or the error the file
// commands give for a path that is empty, absolute or leaves the workspace. It is the one
// path cleaner: permission rules match what it returns, so they see what the command opens.
// It checks p lexically only.
func CleanPath(p string) (string, error) {
	switch {
	case p == "":
		return "", badPath(p, `is empty; use "." for the workspace folder itself`)
	case strings.IndexByte(p, 0) >= 0:
		return "", badPath(p, "contains a NUL byte")
	case len(p) > maxPathBytes:
		return "", badPath(p, "is %d bytes long; the limit is %d", len(p), maxPathBytes)
	case filepath.IsAbs(p):
		return "", badPath(p, `is absolute; give a path relative to the workspace, like "notes/todo.txt"`)
	}
	for _, name := range strings.Split(p, "/") {
		if len(name) > maxNameBytes {
			return "", badPath(p, "has a name of %d bytes; the limit is %d", len(name), maxNameBytes)
		}
	}
	clean := filepath.Clean(p)
	if clean == ".." || strings.HasPrefix(clean, "../") {
		return "", badPath(p, "leaves the workspace")
	}
	return clean, nil
}

// refuseGitWrite refuses a write to p (clean as given, rel as resolved in root) inside a
// git folder, whose files git runs code from (hooks, config): a .git element at any depth,
// in any case (some filesystems fold it), or a folder that is a git folder by its content
// whatever its name, such as the target of a .git link or gitfile, or a bare repository.
func refuseGitWrite(root *os.Root, p, clean, rel string) error {
	const fix = "the .git folder holds code git runs (hooks, config); use git commands through execute_shell instead"
	for _, name := range strings.Split(clean+"/"+rel, "/") {
		if strings.EqualFold(name, ".git") {
			return badPath(p, "is in a .git folder: %s", fix)
		}
	}
	for dir := path.Dir(rel); ; dir = path.Dir(dir) {
		if isGitDir(root, dir) {
			return badPath(p, "is in %q, a git folder (it has HEAD, objects and refs): %s", dir, fix)
		}
		if dir == "." {
			return nil
		}
	}
}

// isGitDir reports whether dir looks like a git folder to git: HEAD, objects/ and refs/.
func isGitDir(root *os.Root, dir string) bool {
	head, err := root.Stat(path.Join(dir, "HEAD"))
	if err != nil || !head.Mode().IsRegular() {
		return false
	}
	for _, sub := range []string{"objects", "refs"} {
		if fi, err := root.Stat(path.Join(dir, sub)); err != nil || !fi.IsDir() {
			return false
		}
	}
	return true
}

// Why a symlink was refused, before the words for the model are chosen.
var (
	errLinkOutside = errors.New("leads outside the workspace")
	errLinkNowhere = errors.New("leads nowhere")
)

// maxLinkHops bounds the symlinks followed in one path, like Linux's 40.
const maxLinkHops = 40

// walker resolves paths inside one open workspace, reading every name through the Root.
type walker struct {
	root *os.Root
	ws   string // the workspace's absolute path, which has no symlink in it
	hops int
}

// resolveIn returns clean (p checked by CleanPath) relative to the workspace with every
// existing symlink resolved. A link leading outside, a dangling one or a loop refuses p.
func resolveIn(root *os.Root, ws, p, clean string) (string, error) {
	if clean == "." {
		return ".", nil
	}
	w := &walker{root: root, ws: ws}
	parts := strings.Split(clean, "/")
	var cur []string
	for i, part := range parts {
		last := i == len(parts)-1
		next := append(slices.Clone(cur), part)
		fi, err := root.Lstat(relOf(next))
		if errors.Is(err, fs.ErrNotExist) {
			// Nothing below a missing name can be a symlink yet.
			cur = append(next, parts[i+1:]...)
			break
		}
		if err != nil {
			return "", &pathError{path: p, problem: "cannot be checked: " + errText(err), err: err}
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			what := "goes through"
			if last {
				what = "is"
			}
			if next, err = w.follow(cur, relOf(next)); err != nil {
				return "", badPath(p, "%s a symlink that %s", what, err)
			}
			if fi, err = root.Lstat(relOf(next)); err != nil {
				return "", &pathError{path: p, problem: "cannot be checked: " + errText(err), err: err}
			}
		}
		if !last && !fi.IsDir() {
			return "", badPath(p, "goes through %q, which is a file, not a folder", strings.Join(parts[:i+1], "/"))
		}
		cur = next
	}
	return relOf(cur), nil
}

// relOf joins names into a workspace-relative path; none is the workspace itself.
func relOf(names []string) string {
	if len(names) == 0 {
		return "."
	}
	return path.Join(names...)
}

// follow resolves the symlink at link (in folder dir) to the names of what it leads to,
// which must exist and be inside the workspace. Lexical `..` is right here: dir holds no
// symlink, so its parent is what the kernel would find too.
func (w *walker) follow(dir []string, link string) ([]string, error) {
	if w.hops++; w.hops > maxLinkHops {
		return nil, errLinkNowhere
	}
	target, err := w.root.Readlink(link)
	if err != nil {
		return nil, errLinkNowhere
	}
	cur := slices.Clone(dir)
	if filepath.IsAbs(target) {
		target = filepath.Clean(target)
		if !within(w.ws, target) {
			return nil, errLinkOutside // whether it exists there is nobody's business here
		}
		cur, target = nil, strings.TrimPrefix(strings.TrimPrefix(target, w.ws), "/")
	}
	names := strings.Split(target, "/")
	for i, name := range names {
		switch name {
		case "", ".":
			continue
		case "..":
			if len(cur) == 0 {
				return nil, errLinkOutside
			}
			cur = cur[:len(cur)-1]
			continue
		}
		next := append(slices.Clone(cur), name)
		fi, err := w.root.Lstat(relOf(next))
		if err != nil {
			return nil, errLinkNowhere
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			if next, err = w.follow(cur, relOf(next)); err != nil {
				return nil, err
			}
			if fi, err = w.root.Lstat(relOf(next)); err != nil {
				return nil, errLinkNowhere
			}
		}
		if !fi.IsDir() && i < len(names)-1 {
			return nil, errLinkNowhere // a file where the target goes on below it
		}
		cur = next
	}
	return cur, nil
}

// within reports whether path is root or below it; both must be clean and absolute.
func within(root, path string) bool {
	return root == "/" || path == root || strings.HasPrefix(path, root+"/")
}

// openIn opens the workspace (OpenWorkspace) and resolves p in it: the check gives clear
// errors, the Root keeps the operation that follows inside even if the tree changes. It
// returns the Root (the caller closes it), the workspace's path and p resolved.
func openIn(workspace, p string) (root *os.Root, ws, rel string, err error) {
	clean, err := CleanPath(p)
	if err != nil {
		return nil, "", "", err
	}
	root, ws, err = openWorkspace(workspace)
	if err != nil {
		return nil, "", "", err
	}
	if rel, err = resolveIn(root, ws, p, clean); err != nil {
		root.Close()
		return nil, "", "", err
	}
	if testHookResolved != nil {
		testHookResolved(rel)
	}
	return root, ws, rel, nil
}

// testHookResolved, set by tests, runs between a path's check and its use, where a
// symlink swapped in is the race the Root must win.
var testHookResolved func(rel string)

// ResolveLinks returns the workspace-relative path p names once the workspace's symlinks
// are resolved: what the file commands open for p (pub/link to ../secrets/k gives
// secrets/k). Permission rules match it as well as p (permission.Options.Resolve), so a
// link cannot carry a command past a rule on its target. Errors are ResolvePath's.
func ResolveLinks(workspace, p string) (string, error) { return resolve(workspace, p) }

// resolve is openIn for a caller that only wants the answer, not the Root.
func resolve(workspace, p string) (string, error) {
	root, _, rel, err := openIn(workspace, p)
	if err != nil {
		return "", err
	}
	root.Close()
	return rel, nil
}

// OpenRead opens the workspace-relative path p for reading as the file commands do:
// confined to the workspace (ResolvePath's checks, then an os.Root), refusing a file with
// more than one hard link, and without waiting on a FIFO planted there. The caller checks
// what kind of file it got. Errors are phrased for the model.
func OpenRead(workspace, p string) (*os.File, error) { return openRead(workspace, p) }

// openRead opens p in the workspace for reading, refusing a file with more than one hard
// link. O_NONBLOCK keeps a FIFO planted in the workspace from hanging the open.
func openRead(workspace, p string) (*os.File, error) {
	root, _, rel, err := openIn(workspace, p)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	f, err := root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fsError(workspace, p, err)
	}
	fi, err := f.Stat()
	if err == nil {
		err = refuseHardLinked(p, fi)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// fsError turns an error from a workspace operation on p into words for the model.
func fsError(workspace, p string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return &pathError{path: p, problem: "does not exist", err: err}
	case errors.Is(err, fs.ErrPermission):
		return &pathError{path: p, problem: "is not accessible: permission denied", err: err}
	}
	// The tree may have changed since the check (say, a symlink swapped in and refused by
	// os.Root): checking again names the problem the same way the first check would have.
	if _, rerr := resolve(workspace, p); rerr != nil {
		return rerr
	}
	return &pathError{path: p, problem: "failed: " + errText(err), err: err}
}

// errText is the cause of err without the operation and host path os errors carry.
func errText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err.Error()
	}
	return err.Error()
}
