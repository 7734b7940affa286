package commands

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// proc is a /proc/PID directory held open: every read through it is of that one
// process, and fails once it has ended, even when another process has taken its pid.
type proc struct {
	pid string
	fd  int
}

func openProc(pid string) (proc, error) {
	fd, err := unix.Open("/proc/"+pid, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	return proc{pid: pid, fd: fd}, err
}

func (p proc) close() { unix.Close(p.fd) }

// stat is stat(2) of name beneath the process's directory, following it (a descriptor's
// or a mapping's link, the namespace's).
func (p proc) stat(name string) (unix.Stat_t, error) {
	var st unix.Stat_t
	err := unix.Fstatat(p.fd, name, &st, 0)
	return st, err
}

// ns is the pid namespace the process is in.
func (p proc) ns() ([2]uint64, error) {
	st, err := p.stat("ns/pid")
	return [2]uint64{st.Dev, st.Ino}, err
}

// open opens name beneath the process's directory.
func (p proc) open(name string) (*os.File, error) {
	fd, err := unix.Openat(p.fd, name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: "/proc/" + p.pid + "/" + name, Err: err}
	}
	return os.NewFile(uintptr(fd), "/proc/"+p.pid+"/"+name), nil
}

func (p proc) read(name string) ([]byte, error) {
	f, err := p.open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// readlink is the target of the link name beneath the process's directory.
func (p proc) readlink(name string) (string, error) {
	buf := make([]byte, 256)
	n, err := unix.Readlinkat(p.fd, name, buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

func (p proc) list(name string) ([]string, error) {
	f, err := p.open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Readdirnames(-1)
}

// parent is the pid of the process's parent, from its stat.
func (p proc) parent() (string, error) {
	stat, err := p.read("stat")
	if err != nil {
		return "", err
	}
	f := statFields(stat)
	if len(f) < 2 {
		return "", fmt.Errorf("/proc/%s/stat: unexpected %q", p.pid, stat)
	}
	return f[1], nil
}

// parentIs says whether the process's parent is ppid.
func (p proc) parentIs(ppid string) bool {
	got, err := p.parent()
	return err == nil && got == ppid
}

// errTop is openParent's answer for the first process of all, which has no parent.
var errTop = errors.New("no parent")

// openParent opens the process's parent, checked to be its parent still: the process
// names it after it was opened. A process that took the pid of a parent that ended
// meanwhile is not, since a child is handed to another parent as its parent exits, before
// that pid is free. It fails when the process is gone, or its parent cannot be followed.
func (p proc) openParent() (proc, error) {
	for range 3 { // a parent that ended is read again: the one the child was handed to
		ppid, err := p.parent()
		if err != nil {
			return proc{}, err
		}
		if ppid == "0" {
			return proc{}, errTop
		}
		parent, err := openProc(ppid)
		if err == nil && p.parentIs(ppid) {
			return parent, nil
		} else if err == nil {
			parent.close()
		}
	}
	return proc{}, fmt.Errorf("/proc/%s: its parent changed while it was read", p.pid)
}
