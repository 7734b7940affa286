package commands

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// ErrWorkspaceLink marks a workspace folder whose own path goes through a symlink: file
// commands, the sandbox and agent removal refuse to follow it, since whoever can change
// the link (a parent agent, a cloned repo) could point the whole workspace elsewhere.
var ErrWorkspaceLink = errors.New("workspace path goes through a symlink")

// OpenWorkspace opens the workspace folder ws as an os.Root. ws must be absolute (it is made
// so) and no component of it may be a symlink: it is walked from / with O_NOFOLLOW, and the
// Root opened is checked to be that very folder. The daemon stores real paths (it resolves
// the operator's workspace_root once, at start), so a symlink found here was planted later.
func OpenWorkspace(ws string) (*os.Root, error) {
	r, _, err := openWorkspace(ws)
	return r, err
}

// WorkspaceDir returns ws, absolute and clean, after the checks OpenWorkspace makes: the
// path a sandbox binds, with no symlink in it.
func WorkspaceDir(ws string) (string, error) {
	r, abs, err := openWorkspace(ws)
	if err != nil {
		return "", err
	}
	r.Close()
	return abs, nil
}

// OpenWorkspaceDir opens the workspace folder ws itself (O_PATH), by the same walk that
// follows no symlink. A sandbox that binds the folder by this descriptor (bwrap
// --bind-fd) cannot be redirected by a link swapped in after the check, as a path could.
func OpenWorkspaceDir(ws string) (*os.File, error) {
	if ws == "" {
		return nil, errors.New("workspace: no workspace folder is set for this agent")
	}
	abs, err := filepath.Abs(ws)
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	fd, err := openNoFollow(abs)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), abs), nil
}

func openWorkspace(ws string) (*os.Root, string, error) {
	if ws == "" {
		return nil, "", errors.New("workspace: no workspace folder is set for this agent")
	}
	abs, err := filepath.Abs(ws)
	if err != nil {
		return nil, "", fmt.Errorf("workspace: %w", err)
	}
	fd, err := openNoFollow(abs)
	if err != nil {
		return nil, "", err
	}
	var want unix.Stat_t
	err = unix.Fstat(fd, &want)
	unix.Close(fd)
	if err != nil {
		return nil, "", fmt.Errorf("workspace: folder %q is not usable: %w", ws, err)
	}
	if testHookWorkspaceWalked != nil {
		testHookWorkspaceWalked()
	}
	r, err := os.OpenRoot(abs)
	if pe := (*fs.PathError)(nil); errors.As(err, &pe) {
		err = pe.Err // the path is ws, said already
	}
	if err != nil {
		return nil, "", fmt.Errorf("workspace: folder %q is not usable: %w", ws, err)
	}
	// OpenRoot follows links: a link swapped in since the walk gives another folder.
	fi, err := r.Stat(".")
	st, ok := statOf(fi)
	if err != nil || !ok || uint64(st.Dev) != want.Dev || st.Ino != want.Ino {
		r.Close()
		return nil, "", fmt.Errorf("workspace: folder %q changed while it was opened, through a symlink: %w", ws, ErrWorkspaceLink)
	}
	return r, abs, nil
}

// openNoFollow opens the folder abs with O_PATH, walking it one name at a time from / and
// following no symlink on the way. Errors say which name is the problem. A path under
// /proc/PID/root starts its walk at that process's root (ViewNamespace): the one link
// it follows, which names another mount namespace's /, not a folder anyone may swap.
func openNoFollow(abs string) (int, error) {
	done := "/"
	if pid := ViewNamespace(abs); pid != "" {
		done = "/proc/" + pid + "/root"
	}
	fd, err := unix.Open(done, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("workspace: %w", err)
	}
	for _, name := range strings.Split(strings.TrimPrefix(abs, done), "/") {
		if name == "" {
			continue
		}
		next, err := unix.Openat(fd, name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			err = walkError(fd, name, filepath.Join(done, name), abs, err)
			unix.Close(fd)
			return -1, err
		}
		unix.Close(fd)
		fd, done = next, filepath.Join(done, name)
	}
	return fd, nil
}

// walkError names why the walk could not open name in dir: a symlink, a file, or nothing.
func walkError(dir int, name, at, ws string, err error) error {
	var st unix.Stat_t
	if serr := unix.Fstatat(dir, name, &st, unix.AT_SYMLINK_NOFOLLOW); serr == nil {
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFLNK:
			return fmt.Errorf("workspace: folder %q is not usable: %s in its path is a symlink, which file commands never follow there; remove the link (rm %s) and try again: %w",
				ws, at, filepath.Base(at), ErrWorkspaceLink)
		case unix.S_IFDIR:
		default:
			return &wsError{fmt.Sprintf("workspace: %q is not a folder", at), err}
		}
	}
	if errors.Is(err, syscall.ENOENT) && at == ws {
		return &wsError{fmt.Sprintf("workspace: folder %q is not usable: it does not exist", ws), err}
	}
	return fmt.Errorf("workspace: folder %q is not usable: %s: %w", ws, at, err)
}

// wsError is a workspace error whose words are chosen here, still matching the errno
// behind it (errors.Is(err, fs.ErrNotExist)).
type wsError struct {
	msg string
	err error
}

func (e *wsError) Error() string { return e.msg }
func (e *wsError) Unwrap() error { return e.err }

// testHookWorkspaceWalked, set by tests, runs between the walk and the Root's open.
var testHookWorkspaceWalked func()

func statOf(fi os.FileInfo) (*syscall.Stat_t, bool) {
	if fi == nil {
		return nil, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return st, ok
}

// ViewNamespace returns PID when ws is named under /proc/PID/root: a folder as the mount
// namespace of process PID shows it, as an effect preview's overlay that a daemon that
// is not root mounts in a user namespace of its own. A sandbox that binds such a folder
// runs in PID's user and mount namespaces, where that is what the path holds. "" for
// every other path.
func ViewNamespace(ws string) string {
	rest, ok := strings.CutPrefix(ws, "/proc/")
	if !ok {
		return ""
	}
	pid, rest, _ := strings.Cut(rest, "/")
	if pid == "" || strings.Trim(pid, "0123456789") != "" || (rest != "root" && !strings.HasPrefix(rest, "root/")) {
		return ""
	}
	return pid
}
