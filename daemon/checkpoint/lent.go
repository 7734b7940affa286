package checkpoint

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/agentd/agentd/commands"
)

// lendLog is the note a capture or a restore keeps, in the store's folder, of what it
// lent itself access to (lend, dirFrame.need): each entry is written, and synced, before
// the mode changes, and the note is removed once every mode is put back. A store opened
// after a crash gives each path it names its mode back (recoverLent), as the journal
// finishes a restore, so a crash while lending leaves no folder open to everyone.
type lendLog struct {
	root int    // the store's folder
	ws   string // the workspace the paths are in, noted with each
	sync bool   // not Ephemeral
	fd   int    // the note, once something was lent; 0 before
	// earlier: the note held an earlier walk's entries, whose modes may not be back
	earlier bool
	left    *bool // Store.lentLeft
}

const (
	lentName  = "lent"
	lentMagic = "agentd-lent 1\n"
)

// newLendLog is the note of a walk of s's of the workspace ws (RemoveTree's walk, which
// removes what it lends, keeps none). A note an earlier walk left, not having given
// every mode back, is acted on first, as a store opened after a crash does; if that
// fails it stays, and so does the mode, until a later walk gives it back.
func newLendLog(s *Store, ws string) *lendLog {
	if s.lentLeft && recoverLent(s.root) == nil {
		s.lentLeft = false
	}
	return &lendLog{root: s.root, ws: ws, sync: !s.opt.Ephemeral, left: &s.lentLeft}
}

// note records, durably, that path (in the workspace ws; "" for its root), the inode
// dev and ino, is about to get mode set, and had mode was.
func (l *lendLog) note(path string, dev, ino uint64, was, set uint32) error {
	if l == nil {
		return nil
	}
	var e encoder
	if l.fd == 0 {
		fd, err := unix.Openat(l.root, lentName, unix.O_WRONLY|unix.O_CREAT|unix.O_APPEND|unix.O_CLOEXEC, 0o600)
		var st unix.Stat_t
		if err == nil {
			err = unix.Fstat(fd, &st)
		}
		if err != nil {
			return fmt.Errorf("noting a lent mode: %w", err)
		}
		l.fd, l.earlier = fd, st.Size > 0
		if !l.earlier { // else a walk that failed left its entries: they stay, ahead of these
			e.b = append(e.b, lentMagic...)
		}
	}
	e.str(l.ws)
	e.str(path)
	e.uvarint(dev)
	e.uvarint(ino)
	e.uvarint(uint64(was))
	e.uvarint(uint64(set))
	_, err := unix.Write(l.fd, e.b)
	if err == nil && l.sync {
		err = errors.Join(unix.Fsync(l.fd), unix.Fsync(l.root))
	}
	if err != nil {
		return fmt.Errorf("noting a lent mode: %w", err)
	}
	return nil
}

// done closes the note, and removes it when every mode it names is back: this walk's
// (back) and those of an earlier walk it held, which the next walk gives back first.
func (l *lendLog) done(back bool) error {
	if l == nil || l.fd == 0 {
		return nil
	}
	err := unix.Close(l.fd)
	l.fd = 0
	if back && !l.earlier {
		err = errors.Join(err, unix.Unlinkat(l.root, lentName, 0))
		if err == nil && l.sync {
			err = unix.Fsync(l.root)
		}
	}
	if (!back || l.earlier || err != nil) && l.left != nil {
		*l.left = true
	}
	return err
}

// recoverLent gives back the modes a walk a crash interrupted had lent, as its note in
// the store's folder root names them: each path still the inode noted and still at the
// mode lent gets the mode it had; anything since changed is left as it is. The note is
// then removed.
func recoverLent(root int) error {
	b, err := readAt(root, lentName)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		return err
	}
	d := decoder{b: bytes.TrimPrefix(b, []byte(lentMagic))}
	if len(d.b) == len(b) {
		return fmt.Errorf("the note of lent modes is damaged: remove %s", lentName)
	}
	type lent struct {
		ws, path string
		dev, ino uint64
		was, set uint32
	}
	var all []lent
	for len(d.b) > 0 && d.err == nil {
		l := lent{ws: d.str(), path: d.str(), dev: d.uvarint(), ino: d.uvarint(), was: uint32(d.uvarint()), set: uint32(d.uvarint())}
		if d.err == nil { // an entry cut by the crash was never acted on
			all = append(all, l)
		}
	}
	var errs error
	for i := len(all) - 1; i >= 0; i-- { // deepest first: a folder's parent is still searchable
		errs = errors.Join(errs, putLentBack(all[i].ws, all[i].path, all[i].dev, all[i].ino, all[i].was, all[i].set))
	}
	if errs != nil {
		return fmt.Errorf("giving back the modes a crash left lent: %w", errs)
	}
	return errors.Join(unix.Unlinkat(root, lentName, 0), unix.Fsync(root))
}

// putLentBack gives path in the workspace ws mode was, if it is still the inode dev, ino
// at mode set; it follows no link on the way.
func putLentBack(ws, path string, dev, ino uint64, was, set uint32) error {
	top, err := commands.OpenWorkspaceDir(ws)
	if errors.Is(err, unix.ENOENT) {
		return nil // the workspace is gone, and what it held with it
	} else if err != nil {
		return err
	}
	defer top.Close()
	h, err := unix.Dup(int(top.Fd()))
	if err != nil {
		return err
	}
	for _, name := range strings.Split(path, "/") {
		if name == "" {
			continue
		}
		next, err := unix.Openat(h, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		unix.Close(h)
		if err != nil {
			return nil // gone, or not reachable as it was: nothing of ours to put back
		}
		h = next
	}
	defer unix.Close(h)
	var st unix.Stat_t
	if err := unix.Fstat(h, &st); err != nil || st.Dev != dev || st.Ino != ino || st.Mode&0o7777 != set {
		return nil
	}
	return unix.Chmod(procFd(h), was)
}
