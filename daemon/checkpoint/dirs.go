package checkpoint

import (
	"errors"
	"fmt"
	"slices"

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
	path   []byte // the top folder's path relative to the root ("" for the root)
}

type dirFrame struct {
	fd       int // -1 while closed
	dev, ino uint64
	pathLen  int // len(path) before this folder's name was added
}

// openRoot opens the workspace ws.
func openRoot(ws string) (*dirStack, error) {
	pfd, err := commands.OpenWorkspaceDir(ws)
	if err != nil {
		return nil, err
	}
	defer pfd.Close()
	fd, err := unix.Openat(int(pfd.Fd()), ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("workspace %q: %w", ws, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("workspace %q: %w", ws, err)
	}
	return &dirStack{frames: []dirFrame{{fd: fd, dev: st.Dev, ino: st.Ino}}}, nil
}

// fd is the open descriptor of the top folder.
func (s *dirStack) fd() int { return s.frames[len(s.frames)-1].fd }

// push opens the folder name in the top folder and makes it the top. It fails on
// anything that is not a folder, a symlink to one included.
func (s *dirStack) push(name string) (*unix.Stat_t, error) {
	fd, err := unix.Openat(s.fd(), name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, err
	}
	s.frames = append(s.frames, dirFrame{fd: fd, dev: st.Dev, ino: st.Ino, pathLen: len(s.path)})
	s.path = appendName(s.path, name)
	if k := len(s.frames) - 1 - openWindow; k >= 1 && s.frames[k].fd >= 0 {
		unix.Close(s.frames[k].fd)
		s.frames[k].fd = -1
	}
	return &st, nil
}

// pop closes the top folder and goes back to its parent.
func (s *dirStack) pop() error {
	top := s.frames[len(s.frames)-1]
	s.frames = s.frames[:len(s.frames)-1]
	s.path = s.path[:top.pathLen]
	defer unix.Close(top.fd)
	p := &s.frames[len(s.frames)-1]
	if p.fd >= 0 {
		return nil
	}
	fd, err := unix.Openat(top.fd, "..", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
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

// close closes every descriptor the stack holds.
func (s *dirStack) close() {
	for _, f := range s.frames {
		if f.fd >= 0 {
			unix.Close(f.fd)
		}
	}
	s.frames = nil
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
