package commands

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
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
// component) may lead outside. Symlinks that exist are resolved in the result; components
// that do not exist yet are kept as given. Errors wrap ErrBadPath and are phrased for the model.
//
// The check is only as good as the moment it ran: built-in commands also do the operation
// itself through an os.Root, which refuses to leave the workspace even if the tree changes.
func ResolvePath(workspace, p string) (string, error) {
	root, rel, err := resolve(workspace, p)
	if err != nil {
		return "", err
	}
	return filepath.Join(root, rel), nil
}

// cleanRel checks p lexically and returns it cleaned, relative to the workspace.
func cleanRel(p string) (string, error) {
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

// realWorkspace returns the workspace directory with its own symlinks resolved, the base
// every containment check compares against.
func realWorkspace(workspace string) (string, error) {
	if workspace == "" {
		return "", errors.New("workspace: no workspace folder is set for this agent")
	}
	abs, err := filepath.Abs(workspace)
	if err != nil {
		return "", fmt.Errorf("workspace: %w", err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", fmt.Errorf("workspace: folder %q is not usable: %w", workspace, err)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", fmt.Errorf("workspace: %w", err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("workspace: %q is not a folder", workspace)
	}
	return real, nil
}

// resolve checks p and returns the workspace's real path and p relative to it with every
// existing symlink resolved, so that the os.Root operation that follows meets none.
func resolve(workspace, p string) (root, rel string, err error) {
	clean, err := cleanRel(p)
	if err != nil {
		return "", "", err
	}
	root, err = realWorkspace(workspace)
	if err != nil {
		return "", "", err
	}
	if clean == "." {
		return root, ".", nil
	}
	parts := strings.Split(clean, "/")
	cur := root
	for i, part := range parts {
		last := i == len(parts)-1
		next := filepath.Join(cur, part)
		fi, err := os.Lstat(next)
		if errors.Is(err, fs.ErrNotExist) {
			// Nothing below a missing name can be a symlink yet.
			cur = filepath.Join(append([]string{next}, parts[i+1:]...)...)
			break
		}
		if err != nil {
			return "", "", &pathError{path: p, problem: "cannot be checked: " + errText(err), err: err}
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			what := "goes through"
			if last {
				what = "is"
			}
			target, err := filepath.EvalSymlinks(next)
			if err != nil {
				return "", "", badPath(p, "%s a symlink that leads nowhere", what)
			}
			if !within(root, target) {
				return "", "", badPath(p, "%s a symlink that leads outside the workspace", what)
			}
			next = target
			if fi, err = os.Stat(next); err != nil {
				return "", "", &pathError{path: p, problem: "cannot be checked: " + errText(err), err: err}
			}
		}
		if !last && !fi.IsDir() {
			return "", "", badPath(p, "goes through %q, which is a file, not a folder", strings.Join(parts[:i+1], "/"))
		}
		cur = next
	}
	rel, err = filepath.Rel(root, cur)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", "", badPath(p, "leaves the workspace")
	}
	return root, rel, nil
}

// within reports whether path is root or below it; both must be clean and absolute.
func within(root, path string) bool {
	return root == "/" || path == root || strings.HasPrefix(path, root+"/")
}

// openIn resolves p and opens the workspace as an os.Root for the operation that follows:
// the check gives clear errors, the Root keeps the operation inside even if the tree changes.
func openIn(workspace, p string) (*os.Root, string, error) {
	root, rel, err := resolve(workspace, p)
	if err != nil {
		return nil, "", err
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, "", fmt.Errorf("workspace: %w", err)
	}
	return r, rel, nil
}

// openRead opens p in the workspace for reading. O_NONBLOCK keeps a FIFO planted in the
// workspace from hanging the open.
func openRead(workspace, p string) (*os.File, error) {
	root, rel, err := openIn(workspace, p)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	f, err := root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fsError(workspace, p, err)
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
	if _, _, rerr := resolve(workspace, p); rerr != nil {
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
