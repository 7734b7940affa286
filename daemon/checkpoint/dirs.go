package checkpoint

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/agentd/agentd/commands"
)

// openWindow is how many of the deepest open folders keep their descriptor.
const openWindow = 32

// errMoved says a folder was moved while it was being worked in.
var errMoved = errors.New("a folder was moved while the workspace was being read or written")

// dirStack is the chain of open folders from the workspace root to the one being
// worked in. The root is opened by commands.OpenWorkspaceDir (no symlink on its path);
// every folder below by one name with O_NOFOLLOW from its parent, so no symlink is
// ever followed and nothing outside the workspace can be reached. Only the root and the
// deepest openWindow folders keep a descriptor: a folder left behind is reopened from
// its child's ".." and checked to be the same folder (device and inode), so a
// 20,000-deep tree needs no more descriptors than a shallow one.
type dirStack struct {
	frames []dirFrame
	path   []byte   // the top folder's path relative to the root ("" for the root)
	lends  *lendLog // notes each mode lent before it changes; nil for none
	ends   bool     // close ends lends: the stack openRoot made, not one borrowing its note
}

type dirFrame struct {
	fd       int // -1 while closed
	dev, ino uint64
	pathLen  int    // len(path) before this folder's name was added
	lent     bool   // the folder gets mode back when it is left: access was lent, or a restore set it
	back     uint32 // the mode the folder gets when it is left (lent)
}

// openRoot opens the workspace ws, noting in lends each mode lent (nil: none).
func openRoot(ws string, lends *lendLog) (*dirStack, error) {
	pfd, err := commands.OpenWorkspaceDir(ws)
	if err != nil {
		return nil, err
	}
	defer pfd.Close()
	ds := &dirStack{lends: lends, ends: true}
	f, _, err := openDir(ds, int(pfd.Fd()), ".", unix.O_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("workspace %q: %w", ws, err)
	}
	ds.frames = []dirFrame{f}
	return ds, nil
}

// noter is what notes a mode lent to name in the top folder ("." the top folder
// itself) before it changes (lendLog.note).
func (s *dirStack) noter(name string) func(dev, ino uint64, was, set uint32) error {
	if s.lends == nil {
		return nil
	}
	return func(dev, ino uint64, was, set uint32) error {
		p := string(s.path)
		if name != "." {
			p = s.pathTo(name)
		}
		return s.lends.note(p, dev, ino, was, set)
	}
}

// openDir opens the folder name in dir, the top folder of ds (flags added to
// O_RDONLY|O_DIRECTORY) and returns its frame and its stat, the mode in it the folder's
// own. A folder the daemon owns but may not read or search (chmod 000, 0200) is lent
// read and search (lend); the frame then says which mode to put back.
func openDir(ds *dirStack, dir int, name string, flags int) (dirFrame, *unix.Stat_t, error) {
	flags |= unix.O_RDONLY | unix.O_DIRECTORY
	f := dirFrame{fd: -1}
	note := ds.noter(name)
	fd, err := unix.Openat(dir, name, flags, 0)
	if err == unix.EACCES {
		var h int
		if h, f.back, err = lend(dir, name, 0o500, note); err == nil {
			f.lent = true
			if fd, err = unix.Open(procFd(h), flags&^unix.O_NOFOLLOW, 0); err != nil {
				unix.Chmod(procFd(h), f.back)
			}
			unix.Close(h)
		}
	}
	if err != nil {
		return f, nil, err
	}
	f.fd = fd
	var st unix.Stat_t
	err = unix.Fstat(fd, &st)
	f.dev, f.ino = st.Dev, st.Ino
	if err == nil && euid != 0 && st.Uid == euid {
		err = f.need(st.Mode, 0o500, note) // readable but not searchable (0400): no name in it can be looked at
	}
	if err != nil {
		return f, nil, errors.Join(err, f.putBack(), unix.Close(fd))
	}
	if f.lent {
		st.Mode = st.Mode&^0o7777 | f.back
	}
	return f, &st, nil
}

// euid is the daemon's user: what it owns, it may lend itself access to.
var euid = uint32(os.Geteuid())

// lend gives the daemon, as the owner of name in dir (a folder or a file), the
// permission bits need for the moment it needs them, through an O_PATH handle that
// cannot follow a link; it returns the handle (to open the same inode through
// /proc/self/fd and to put the mode back) and the mode name had, which is what a
// checkpoint records. Something the daemon does not own keeps its mode: EACCES. note,
// if set, is told first (lendLog).
func lend(dir int, name string, need uint32, note func(dev, ino uint64, was, set uint32) error) (h int, mode uint32, err error) {
	if name == "." {
		h, err = unix.Dup(dir) // the workspace root's O_PATH handle: "." is not looked up in a folder locked to search
	} else {
		h, err = unix.Openat(dir, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	}
	if err != nil {
		return -1, 0, err
	}
	var st unix.Stat_t
	if err = unix.Fstat(h, &st); err == nil {
		k := kindOf(st.Mode)
		mode = st.Mode & 0o7777
		switch {
		case k != kindDir && k != kindFile || st.Uid != euid:
			err = unix.EACCES
		case mode&need != need:
			if note != nil {
				err = note(st.Dev, st.Ino, mode, mode|need)
			}
			if err == nil {
				err = unix.Chmod(procFd(h), mode|need)
				step()
			}
		}
	}
	if err != nil {
		unix.Close(h)
		return -1, 0, err
	}
	return h, mode, nil
}

// openFile opens the regular file e in the top folder of ds to read it, and keeps its
// extended attributes in e (keepXattrs). A file the daemon owns but may not read
// (chmod 000) is lent read permission for the open and the attributes only: lending
// moves its ctime, which e takes (marked racy, so the next checkpoint reads it again)
// once the file is checked to be the one e was statted as.
func openFile(ds *dirStack, e *entry) (int, error) {
	const flags = unix.O_RDONLY | unix.O_NONBLOCK | unix.O_CLOEXEC
	dir := ds.fd()
	fd, err := unix.Openat(dir, e.name, flags|unix.O_NOFOLLOW, 0)
	if err != unix.EACCES {
		if err == nil {
			keepXattrs(e, fd)
		}
		return fd, err
	}
	h, mode, err := lend(dir, e.name, 0o400, ds.noter(e.name))
	if err != nil {
		return -1, err
	}
	defer unix.Close(h)
	if fd, err = unix.Open(procFd(h), flags, 0); err == nil {
		keepXattrs(e, fd) // while they may be read
	}
	err = errors.Join(err, unix.Chmod(procFd(h), mode))
	var st unix.Stat_t
	if err == nil {
		err = unix.Fstat(fd, &st)
	}
	if err == nil && (st.Ino != e.ino || st.Dev != e.dev || st.Size != e.size || st.Mtim.Nano() != e.mtime) {
		err = errChanged
	}
	if err != nil {
		if fd >= 0 {
			unix.Close(fd)
		}
		return -1, err
	}
	e.ctime, e.flags = st.Ctim.Nano(), e.flags|flagRacy
	return fd, nil
}

func procFd(fd int) string { return "/proc/self/fd/" + strconv.Itoa(fd) }

// putBack gives the frame's folder back the mode the daemon lent itself access over.
func (f *dirFrame) putBack() error {
	if !f.lent {
		return nil
	}
	f.lent = false
	return unix.Fchmod(f.fd, f.back)
}

// need lends the top folder the permission bits need (write, to change its entries)
// until it is left, unless it has them.
func (s *dirStack) need(bits uint32) error {
	f := &s.frames[len(s.frames)-1]
	var st unix.Stat_t
	if err := unix.Fstat(f.fd, &st); err != nil {
		return err
	}
	return f.need(st.Mode, bits, s.noter("."))
}

// need gives the frame's folder (mode mode) the permission bits it lacks, keeping its
// own mode to put back; note, if set, is told first.
func (f *dirFrame) need(mode, bits uint32, note func(dev, ino uint64, was, set uint32) error) error {
	if mode&bits == bits {
		return nil
	}
	if note != nil {
		if err := note(f.dev, f.ino, mode&0o7777, mode&0o7777|bits); err != nil {
			return err
		}
	}
	if err := unix.Fchmod(f.fd, mode&0o7777|bits); err != nil {
		return err
	}
	if !f.lent {
		f.lent, f.back = true, mode&0o7777
	}
	return nil
}

// setMode gives the top folder the mode m when it is left: its times are set last,
// through its name ".", which a mode without search would refuse.
func (s *dirStack) setMode(m uint32) {
	f := &s.frames[len(s.frames)-1]
	f.lent, f.back = true, m
}

// fd is the open descriptor of the top folder.
func (s *dirStack) fd() int { return s.frames[len(s.frames)-1].fd }

// push opens the folder name in the top folder and makes it the top. It fails on
// anything that is not a folder, a symlink to one included.
// The stat's mode is the folder's own, not the one lent (openDir). A folder lent
// access past the window is closed like any other: it keeps the mode lent until it is
// reopened from its child's "..", which that mode allows, and left (pop).
func (s *dirStack) push(name string) (*unix.Stat_t, error) {
	f, st, err := openDir(s, s.fd(), name, unix.O_NOFOLLOW|unix.O_CLOEXEC)
	if err != nil {
		return nil, err
	}
	f.pathLen = len(s.path)
	s.frames = append(s.frames, f)
	s.path = appendName(s.path, name)
	if k := len(s.frames) - 1 - openWindow; k >= 1 && s.frames[k].fd >= 0 {
		unix.Close(s.frames[k].fd)
		s.frames[k].fd = -1
	}
	return st, nil
}

// pop puts back the top folder's mode, closes it and goes back to its parent.
func (s *dirStack) pop() error {
	top := s.frames[len(s.frames)-1]
	s.frames = s.frames[:len(s.frames)-1]
	s.path = s.path[:top.pathLen]
	defer unix.Close(top.fd)
	p := &s.frames[len(s.frames)-1]
	if p.fd >= 0 {
		return top.putBack()
	}
	fd, err := unix.Openat(top.fd, "..", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err = errors.Join(err, top.putBack()); err != nil {
		if fd >= 0 {
			unix.Close(fd)
		}
		return fmt.Errorf("reopening %q: %w", s.path, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Dev != p.dev || st.Ino != p.ino {
		unix.Close(fd)
		return fmt.Errorf("%q: %w", s.path, errMoved)
	}
	p.fd = fd
	return nil
}

// close leaves every folder as pop does, so each folder lent access gets its mode back,
// those past the window too, and closes every descriptor the stack holds.
func (s *dirStack) close() error {
	var err error
	for len(s.frames) > 1 {
		err = errors.Join(err, s.pop())
	}
	if f := &s.frames[0]; len(s.frames) == 1 && f.fd >= 0 {
		err = errors.Join(err, f.putBack(), unix.Close(f.fd))
	}
	s.frames = nil
	if s.ends {
		err = errors.Join(err, s.lends.done(err == nil)) // kept after a failure: the next open gives back what is left
	}
	return err
}

// pathTo returns the path of name in the top folder.
func (s *dirStack) pathTo(name string) string { return string(appendName(slices.Clip(s.path), name)) }

func appendName(path []byte, name string) []byte {
	if len(path) > 0 {
		path = append(path, '/')
	}
	return append(path, name...)
}

// readNames returns the names in the folder fd (without . and ..), sorted. fd is
// freshly opened: nothing has read it yet.
func readNames(fd int, buf []byte) ([]string, error) {
	var names []string
	for {
		n, err := unix.Getdents(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if n <= 0 {
			break
		}
		_, _, names = unix.ParseDirent(buf[:n], -1, names)
	}
	slices.Sort(names)
	return names, nil
}

// kindOf returns the kind a stat mode says.
func kindOf(mode uint32) kind {
	switch mode & unix.S_IFMT {
	case unix.S_IFREG:
		return kindFile
	case unix.S_IFDIR:
		return kindDir
	case unix.S_IFLNK:
		return kindSymlink
	case unix.S_IFIFO:
		return kindFifo
	case unix.S_IFSOCK:
		return kindSocket
	case unix.S_IFCHR, unix.S_IFBLK:
		return kindDevice
	}
	return kindUnknown
}

// readLink reads the symlink name in dir, whatever its length.
func readLink(dir int, name string, size int64) (string, error) {
	n := max(int(size), 64)
	for {
		buf := make([]byte, n+1)
		got, err := unix.Readlinkat(dir, name, buf)
		if err != nil {
			return "", err
		}
		if got <= n {
			return string(buf[:got]), nil
		}
		n *= 2
	}
}
