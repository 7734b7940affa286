package checkpoint

import (
	"crypto/sha256"
	gohash "hash"

	"golang.org/x/sys/unix"
)

// A folder past MaxEntries is not captured, but it keeps a stamp: the SHA-256 of the stat
// data (name, mode, owner, size, mtime, ctime, inode, device, link count) of itself and
// of everything it holds, however deep (flagTreeStamp, in the entry's hash). A folder's
// own times move only when a name directly in it is made, removed or renamed, not when
// a file deeper down is rewritten: the stamp takes every entry's, so a change anywhere
// inside — content, a mode, an owner, an extended attribute, a name — moves a ctime it
// covers. Two checkpoints holding the same stamp at a path hold a folder nothing changed
// in between, which the second wall then needs not fail closed on (Diff.Denied). No
// stamp, and the wall fails closed as before, when the walk cannot vouch for all of it:
// a folder it cannot list or open, a name gone while it looked, an entry changed within
// the racy window (a later change could keep its times), or more entries than a second
// MaxEntries. The walk reads no file and watches every folder it lists, so the
// inotify fast path sees a change inside as it sees one elsewhere.

// stamp gives e, a folder in the top folder (stat st) that the capture does not
// capture, the stamp of all it holds, when the walk can vouch for all of it. Errors are
// the context's or the folder stack's: they end the capture.
func (c *capture) stamp(e *entry, st *unix.Stat_t) error {
	sum := sha256.New()
	ok, err := c.stampWalk(sum, e.name, st)
	if err != nil || !ok {
		return err
	}
	sum.Sum(e.hash[:0])
	e.flags |= flagTreeStamp
	return nil
}

// stampWalk adds the stat data of name (stat st) in the top folder to sum, with all it
// holds when it is a folder; ok is false when the walk cannot vouch for some of it.
func (c *capture) stampWalk(sum gohash.Hash, name string, st *unix.Stat_t) (ok bool, err error) {
	if c.stamped++; c.stamped > c.s.opt.MaxEntries || racy(&entry{mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano()}, c.start) {
		return false, nil
	}
	var b encoder
	b.str(name)
	for _, v := range []uint64{uint64(st.Mode), uint64(st.Uid), uint64(st.Gid), uint64(st.Size), uint64(st.Mtim.Nano()),
		uint64(st.Ctim.Nano()), st.Ino, st.Dev, uint64(st.Nlink)} {
		b.uvarint(v)
	}
	if kindOf(st.Mode) != kindDir {
		c.manyNames = c.manyNames || st.Nlink > 1 // a write through a name outside queues no event
		sum.Write(b.b)
		return true, nil
	}
	if err := c.ctx.Err(); err != nil {
		return false, err
	}
	if _, err := c.ds.push(name); err != nil {
		return false, nil
	}
	c.w.add(c.ds.fd()) // before listing it, as folder does
	names, err := readNames(c.ds.fd(), c.buf)
	ok = err == nil
	if ok {
		b.uvarint(uint64(len(names)))
		sum.Write(b.b)
		stats, errs := statAll(c.ds.fd(), names)
		for i := 0; ok && err == nil && i < len(names); i++ {
			if ok = errs[i] == nil; ok {
				ok, err = c.stampWalk(sum, names[i], &stats[i])
			}
		}
	}
	if perr := c.ds.pop(); err == nil {
		err = perr
	}
	return ok, err
}
