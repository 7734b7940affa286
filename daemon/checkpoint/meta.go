package checkpoint

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// xattrDigest is the SHA-256 of the extended attributes of the open fd (names sorted,
// each name and value length-prefixed), or "" when it has none or they cannot be read.
func xattrDigest(fd int) string {
	d, _ := xattrsOf(fd)
	return d
}

// keepXattrs records in e the extended attributes of the open fd: their digest, and
// themselves when they are few enough to keep (flagXattrs).
func keepXattrs(e *entry, fd int) {
	var set []byte
	e.xattrs, set = xattrsOf(fd)
	if e.xattrs != "" && len(set) <= maxXattrSet {
		e.xattrSet, e.flags = string(set), e.flags|flagXattrs
	}
}

// xattrsOf returns xattrDigest's digest and the encoding it hashes.
func xattrsOf(fd int) (string, []byte) {
	buf := make([]byte, 1024)
	n, err := unix.Flistxattr(fd, buf)
	if err == unix.ERANGE {
		if n, err = unix.Flistxattr(fd, nil); err == nil {
			buf = make([]byte, n)
			n, err = unix.Flistxattr(fd, buf)
		}
	}
	if err != nil || n <= 0 {
		return "", nil
	}
	names := bytes.Split(bytes.TrimSuffix(buf[:n], []byte{0}), []byte{0})
	slices.SortFunc(names, bytes.Compare)
	var e encoder
	for _, name := range names {
		v := make([]byte, 256)
		m, err := unix.Fgetxattr(fd, string(name), v)
		if err == unix.ERANGE {
			if m, err = unix.Fgetxattr(fd, string(name), nil); err == nil {
				v = make([]byte, m)
				m, err = unix.Fgetxattr(fd, string(name), v)
			}
		}
		if err != nil {
			m = 0 // gone since listed: the name alone is recorded
		}
		e.str(string(name))
		e.str(string(v[:max(m, 0)]))
	}
	h := sha256.Sum256(e.b)
	return string(h[:]), e.b
}

// putXattrs makes the extended attributes of the open fd those e keeps: the names it
// lacks removed, the others set. Those the daemon may not set (trusted., security. as
// another user than root) are left, and the error says so.
func putXattrs(e *entry, fd int) error {
	if xattrDigest(fd) == e.xattrs {
		return nil
	}
	want := map[string]string{}
	d := decoder{b: []byte(e.xattrSet)}
	for len(d.b) > 0 && d.err == nil {
		name := d.text(true)
		want[name] = d.text(true)
	}
	if d.err != nil {
		return fmt.Errorf("its extended attributes as kept are damaged: %w", d.err)
	}
	var errs []error
	buf := make([]byte, 64<<10)
	if n, err := unix.Flistxattr(fd, buf); err == nil && n > 0 {
		for _, name := range strings.Split(strings.TrimSuffix(string(buf[:n]), "\x00"), "\x00") {
			if _, ok := want[name]; !ok {
				errs = append(errs, unix.Fremovexattr(fd, name))
			}
		}
	}
	for name, v := range want {
		errs = append(errs, unix.Fsetxattr(fd, name, []byte(v), 0))
	}
	return errors.Join(errs...)
}

// nameSet is names as a set (nil for none).
func nameSet(names []string) map[string]bool {
	if len(names) == 0 {
		return nil
	}
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// restamped returns the first path (in path order) where tree b differs from tree a in
// what a diff does not list but a stale check must see: a file's time, inode or ctime
// (moved by a new name made outside, by any write or attribute change), a folder's or
// symlink's time, and any entry's owner or extended attributes; "" when none does. It expects trees a diff finds equal,
// and leaves out the names skip in the top folder.
func (s *Store) restamped(a, b tree, skip map[string]bool) (string, error) {
	var path []byte
	var walk func(a, b tree) (bool, error)
	walk = func(a, b tree) (bool, error) {
		for i := range b {
			y := &b[i]
			x := a.find(y.name)
			if x == nil || len(path) == 0 && skip[y.name] {
				continue // a diff lists it, or it is left out
			}
			n := len(path)
			path = appendName(path, y.name)
			if !sameStamp(x, y) {
				return true, nil
			}
			if x.kind == kindDir && y.kind == kindDir && x.captured() && y.captured() && x.hash != y.hash {
				ta, err := s.subtree(x)
				if err != nil {
					return false, err
				}
				tb, err := s.subtree(y)
				if err != nil {
					return false, err
				}
				if found, err := walk(ta, tb); found || err != nil {
					return found, err
				}
			}
			path = path[:n]
		}
		return false, nil
	}
	found, err := walk(a, b)
	if !found {
		return "", err
	}
	return string(path), err
}

// sameStamp compares what restamped does of one entry.
func sameStamp(x, y *entry) bool {
	if x.uid != y.uid || x.gid != y.gid || x.xattrs != y.xattrs || x.flags&flagMeta != y.flags&flagMeta {
		return false
	}
	if x.kind == y.kind && x.flags&y.flags&flagStamped != 0 && x.mtime != y.mtime {
		return false // a folder's or symlink's time
	}
	return x.kind != kindFile || y.kind != kindFile ||
		x.mtime == y.mtime && x.ctime == y.ctime && x.ino == y.ino && x.dev == y.dev && x.size == y.size
}

// owned gives e's name in the top folder, once put back (err nil), the owner e recorded,
// where the daemon may: as root. A name already so owned is not changed (its ctime
// stays). A link (another name of a file) shares its first name's owner.
func (a *applier) owned(e *entry, err error) error {
	if err != nil || e.flags&flagMeta == 0 || !mayChown {
		return err
	}
	var st unix.Stat_t
	if err := unix.Fstatat(a.ds.fd(), e.name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fmt.Errorf("%q: %w", a.ds.pathTo(e.name), err)
	}
	if st.Uid == e.uid && st.Gid == e.gid {
		return nil
	}
	if err := unix.Fchownat(a.ds.fd(), e.name, int(e.uid), int(e.gid), unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fmt.Errorf("%q: giving it back its owner: %w", a.ds.pathTo(e.name), err)
	}
	step()
	return nil
}

// stamped gives the symlink e's name in the top folder, whose mtime is now, e's.
func (a *applier) stamped(e *entry, now int64) error {
	if e.flags&flagStamped == 0 || now == e.mtime {
		return nil
	}
	if err := unix.UtimesNanoAt(a.ds.fd(), e.name, stamp(e.mtime), unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fmt.Errorf("%q: %w", a.ds.pathTo(e.name), err)
	}
	return nil
}

// stamp is the times to set for mtime (the access time left as it is).
func stamp(mtime int64) []unix.Timespec {
	return []unix.Timespec{{Nsec: unix.UTIME_OMIT}, unix.NsecToTimespec(mtime)}
}

// meta gives e's name, once put back (err nil), its owner and extended attributes; c is
// its entry just before.
func (a *applier) meta(e, c *entry, err error) error {
	if err = a.owned(e, err); err != nil {
		return err
	}
	if e.flags&flagXattrs == 0 && (e.xattrs != "" || c == nil || c.xattrs == "") {
		return nil // none to set, and none known to remove
	}
	const flags = unix.O_RDONLY | unix.O_NONBLOCK | unix.O_CLOEXEC
	fd, err := unix.Openat(a.ds.fd(), e.name, flags|unix.O_NOFOLLOW, 0)
	if err == unix.ELOOP {
		return nil // a symlink's are the system's
	}
	if err == nil {
		err = errors.Join(putXattrs(e, fd), unix.Close(fd))
	}
	if errors.Is(err, unix.EACCES) { // locked by its owner, the daemon (000, 0400): lent read and write for the moment
		var h int
		var mode uint32
		if h, mode, err = lend(a.ds.fd(), e.name, 0o600, a.ds.noter(e.name)); err == nil {
			if fd, err = unix.Open(procFd(h), flags, 0); err == nil {
				err = errors.Join(putXattrs(e, fd), unix.Close(fd))
			}
			err = errors.Join(err, unix.Chmod(procFd(h), mode), unix.Close(h))
		}
	}
	if err != nil {
		a.notes.add(a.ds.pathTo(e.name), "its extended attributes could not all be put back ("+err.Error()+")", false)
	}
	return nil
}

// mayChown says the daemon may give files any owner: it runs as root.
var mayChown = os.Geteuid() == 0
