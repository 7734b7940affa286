package checkpoint

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/internal/randid"
)

// Restored is what a restore did.
type Restored struct {
	// Before is the checkpoint of the workspace as it was just before: Restore(ctx, ws,
	// Before.ID) undoes this restore (as far as Before is not Partial).
	Before Info
	To     ID
	// Diff is what the restore changed, from Before to To.
	Diff *Diff
	// Notices name what was left as it was, and why: paths To did not capture, sockets
	// and devices, setuid and setgid bits.
	Notices     []Notice
	MoreNotices int
}

// Restore puts the workspace ws back exactly as it was at checkpoint to: bytes, modes,
// file times, symlinks, hard links, empty folders, and no file created since. It first
// checkpoints the workspace as it is (Restored.Before), so the restore can be undone.
//
// Every path is opened beneath the workspace without following a symlink (a link
// planted since cannot redirect a write outside), and every file is written to a
// temporary name and renamed into place. A journal written before the first change
// makes a restore a crash interrupts finish on the next call (or Recover); once
// started, a restore runs to the end whatever ctx says. If it fails part way, the error
// says so and Before holds the workspace as it was.
func (s *Store) Restore(ctx context.Context, ws string, to ID) (*Restored, error) {
	err := s.begin(ctx)
	defer s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return s.restore(ctx, ws, to, nil)
}

// restore is Restore, under mu; with ch set, only the change from ch.from to to is
// applied, path by path, and only to a workspace exactly as checkpoint ch.from holds it,
// else a *ChangedError says how it differs.
func (s *Store) restore(ctx context.Context, ws string, to ID, ch *delta) (*Restored, error) {
	target, err := s.readRecord(to)
	if err != nil {
		return nil, err
	}
	err = s.reach(target.root, map[hash]bool{}, func(h hash, size int64) error {
		var st unix.Stat_t
		if err := unix.Fstatat(s.objects, h.String(), &st, unix.AT_SYMLINK_NOFOLLOW); err != nil || st.Size != size {
			return fmt.Errorf("object %s is missing or damaged", h)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("checkpoint %d cannot be restored: %w", to, err)
	}
	abs, err := filepath.Abs(ws)
	if err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	// The daemon's write waits, as an agent's command does, while git reads the
	// repositories it would write: those of the helpers' folder too, unless left out.
	end, err := commands.WriteHold(ctx, abs, ch == nil || !slices.Contains(ch.skip, commands.HelpersFolder))
	if err != nil {
		return nil, fmt.Errorf("restore: nothing was changed, as git ran in the workspace until it had to give up: %w", err)
	}
	defer end()
	// It always walks: the stale check and what the restore keeps as already right must
	// see the workspace as it is, which the inotify fast path cannot promise (watch.go).
	before, err := s.checkpoint(ctx, abs, to, true)
	s.collecting.Wait()
	if err == nil {
		err, s.collectErr = s.collectErr, nil
	}
	if err != nil {
		return nil, fmt.Errorf("restore: the workspace could not be checkpointed first, so nothing was changed: %w", err)
	}
	r := &Restored{Before: before, To: to}
	j := &journal{ws: abs, to: to, before: before.ID}
	if ch != nil {
		if err := s.unchanged(before, ch); err != nil {
			if !s.sameTree(before.root, target.root, ch.skip...) {
				return nil, err
			}
			r.Diff = &Diff{From: before.ID, To: to} // a crash left it applied: nothing to do
			return r, nil
		}
		j.from, j.skip = ch.from, ch.skip
		r.Diff, err = s.diff(ch.root, target.root, ch.skip...)
	} else {
		r.Diff, err = s.diff(before.root, target.root)
	}
	if err != nil {
		return nil, err
	}
	r.Diff.From, r.Diff.To = before.ID, to
	if before.root == target.root || ch != nil && r.Diff.Files+r.Diff.Folders == 0 {
		return r, nil
	}
	if err := s.writeDurable(s.root, journalName, j.encode()); err != nil {
		return nil, fmt.Errorf("restore: writing its journal, before changing anything: %w", err)
	}
	s.pending = j
	notes, err := s.finish(j, true)
	r.Notices, r.MoreNotices = notes.list, notes.more
	if err == nil { // the daemon's write, not a running command's: by what the two checkpoints count
		commands.ExplainGrowthIn(abs, footprint(target)-footprint(before))
	}
	return r, err
}

// recover finishes the restore a crash interrupted, if any.
func (s *Store) recover(context.Context) error {
	j := s.pending
	if j == nil {
		return nil
	}
	if _, err := s.finish(j, false); err != nil {
		return fmt.Errorf("finishing the restore a crash interrupted: %w", err)
	}
	return nil
}

// finish makes the workspace what the journal's target says, then removes the journal.
// It removes it after a failure too: the error says what happened, and a store that
// retried forever could never checkpoint again. fresh says j.before was captured just
// now (not before a crash): a folder it shows already as the target is left unread.
func (s *Store) finish(j *journal, fresh bool) (notices, error) {
	notes, err := s.apply(j, fresh)
	if err != nil {
		err = fmt.Errorf("restore of checkpoint %d failed part way, and the workspace is partly restored (checkpoint %d holds it as it was before): %w",
			j.to, j.before, err)
	}
	rerr := unix.Unlinkat(s.root, journalName, 0)
	step()
	if rerr == nil {
		rerr = s.fsync(s.root)
	}
	s.pending = nil
	if err == nil && rerr != nil {
		err = fmt.Errorf("restore done, but removing its journal failed: %w", rerr)
	}
	return notes, err
}

// apply makes the workspace hold exactly the tree of checkpoint j.to, then syncs its
// filesystem. The tree of j.before (the workspace just before) tells which files are
// already right: a file whose stat data is unchanged since then has the content it had.
func (s *Store) apply(j *journal, fresh bool) (notices, error) {
	if j.from != 0 {
		return s.applyChange(j)
	}
	target, err := s.readRecord(j.to)
	if err != nil {
		return notices{}, err
	}
	// A folder left unread would not have its hard links made again.
	a := &applier{s: s, buf: make([]byte, 32<<10), firsts: map[string]devIno{}, fresh: fresh && !target.links}
	t, err := s.readTree(target.root)
	if err != nil {
		return a.notes, err
	}
	var cache tree
	if before, err := s.readRecord(j.before); err == nil {
		cache, _ = s.readTree(before.root) // without it every file is written again
	}
	return a.notes, a.in(j.ws, func() error { return a.dir(t, cache) })
}

// in runs fn with the workspace ws open as the applier's root, made writable for it
// and given its mode back after, then syncs its filesystem.
func (a *applier) in(ws string, fn func() error) error {
	var err error
	if a.ds, err = openRoot(ws, newLendLog(a.s, ws)); err != nil {
		return err
	}
	defer a.ds.close()
	if err = a.ds.need(0o700); err != nil {
		return fmt.Errorf("workspace %q: %w", ws, err)
	}
	err = errors.Join(fn(), a.ds.frames[0].putBack())
	if err == nil {
		err = a.s.syncfs(a.ds.fd())
	}
	return err
}

// applier puts a tree back into the workspace, one folder at a time.
type applier struct {
	s      *Store
	ds     *dirStack
	buf    []byte
	notes  notices
	firsts map[string]devIno // the files with several names put back, by path
	fresh  bool              // the cache was captured just now, not before a crash
	// changeOnly: only a change's paths are written (applyChange); the rest of the
	// workspace is as the change's first checkpoint holds it.
	changeOnly bool
}

// restoreMode is the mode a restore gives: setuid and setgid are not put back (the
// daemon would own the files).
func restoreMode(m uint32) uint32 { return m &^ 0o6000 }

// tempPrefix names the files a restore writes before renaming them into place; one a
// crash left behind is removed as any name the target lacks.
const tempPrefix = ".agentd-restore-"

// dir makes the top folder hold exactly the entries of t; cache is the folder's tree
// just before the restore (nil if it was not a folder).
func (a *applier) dir(t, cache tree) error {
	names, err := readNames(a.ds.fd(), a.buf)
	if err != nil {
		return fmt.Errorf("listing %q: %w", a.ds.path, err)
	}
	for _, n := range names {
		if t.find(n) == nil {
			if err := a.remove(n); err != nil {
				return err
			}
		}
	}
	names = names[:0]
	for i := range t {
		names = append(names, t[i].name)
	}
	stats, errs := statAll(a.ds.fd(), names)
	for i := range t {
		if err := a.entry(&t[i], cache.find(t[i].name), &stats[i], errs[i]); err != nil {
			return err
		}
	}
	return nil
}

// entry makes e's name in the top folder what e says; c is its entry just before, and
// st and err its stat now.
func (a *applier) entry(e, c *entry, st *unix.Stat_t, err error) error {
	fd := a.ds.fd()
	if !e.captured() {
		a.notes.add(a.ds.pathTo(e.name), "was not captured ("+e.note+"): left as it is", true)
		return nil
	}
	if err != nil && err != unix.ENOENT {
		return fmt.Errorf("%q: %w", a.ds.pathTo(e.name), err)
	}
	live := kindUnknown // nothing there
	if err == nil {
		live = kindOf(st.Mode)
	}
	if e.mode&0o6000 != 0 {
		a.notes.add(a.ds.pathTo(e.name), "had setuid or setgid bits, which are not put back", false)
	}
	switch e.kind {
	case kindDir:
		if a.fresh && live == kindDir && c != nil && *c == *e {
			return nil // just captured as the target has it, to the last inode and time
		}
		return a.meta(e, c, a.folder(e, c, live))
	case kindFile:
		if e.target != "" {
			return a.link(e, st, live)
		}
		return a.meta(e, c, a.file(e, c, st, live))
	case kindSymlink:
		if live == kindSymlink {
			if target, err := readLink(fd, e.name, st.Size); err == nil && target == e.target {
				return a.meta(e, c, a.stamped(e, st.Mtim.Nano()))
			}
		}
		tmp := tempPrefix + randid.Hex(12)
		if err := unix.Symlinkat(e.target, fd, tmp); err != nil {
			return fmt.Errorf("%q: %w", a.ds.pathTo(e.name), err)
		}
		err := a.replace(tmp, e.name, live)
		if err == nil {
			err = a.stamped(e, 0)
		}
		return a.meta(e, c, err)
	case kindFifo:
		var ferr error
		if live != kindFifo || st.Mode&0o7777 != restoreMode(e.mode) {
			ferr = a.fifo(e, live)
		}
		return a.meta(e, c, ferr)
	case kindSocket:
		var serr error
		if live != kindSocket {
			serr = a.socket(e, live)
		}
		return a.meta(e, c, serr)
	default: // a device: its number is not recorded, so one there is kept, anything else removed
		if live == kindDevice {
			a.notes.add(a.ds.pathTo(e.name), "was a device, which a restore cannot make: the device there was left as it is", true)
			return nil
		}
		a.notes.add(a.ds.pathTo(e.name), "was a device, which a restore cannot make: what is there now was removed", true)
		return a.remove(e.name)
	}
}

// socket makes e's name a socket, as one its program left behind (no program listens
// on it: a server run again binds it anew). Anyone may make one with mknod.
func (a *applier) socket(e *entry, live kind) error {
	tmp := tempPrefix + randid.Hex(12)
	if err := unix.Mknodat(a.ds.fd(), tmp, unix.S_IFSOCK|restoreMode(e.mode), 0); err != nil {
		return fmt.Errorf("%q: %w", a.ds.pathTo(e.name), err)
	}
	step()
	return a.replace(tmp, e.name, live)
}

// folder makes e a folder, and its contents what e's tree says.
func (a *applier) folder(e, c *entry, live kind) error {
	fd := a.ds.fd()
	if live != kindDir && live != kindUnknown {
		if err := a.remove(e.name); err != nil {
			return err
		}
		live = kindUnknown
	}
	if live == kindUnknown {
		if err := unix.Mkdirat(fd, e.name, 0o700); err != nil {
			return fmt.Errorf("%q: %w", a.ds.pathTo(e.name), err)
		}
		step()
	}
	st, err := a.ds.push(e.name)
	if err != nil {
		return fmt.Errorf("%q: %w", a.ds.pathTo(e.name), err)
	}
	err = a.writable()
	var t, ct tree
	if err == nil {
		t, err = a.s.subtree(e)
	}
	if c != nil && c.kind == kindDir && c.captured() {
		ct, _ = a.s.subtree(c)
	}
	if err == nil {
		err = a.dir(t, ct)
	}
	if want := restoreMode(e.mode); err == nil && st.Mode&0o7777 != want {
		a.ds.setMode(want)
		step()
	}
	if err == nil && e.flags&flagStamped != 0 { // last: what it holds is as e says
		err = unix.UtimesNanoAt(a.ds.fd(), ".", stamp(e.mtime), 0)
	}
	return errors.Join(err, a.ds.pop())
}

// file makes e's name a file with e's content, mode and time, keeping the file there if
// it is already that.
func (a *applier) file(e, c *entry, st *unix.Stat_t, live kind) error {
	fd := a.ds.fd()
	keep := live == kindFile && c != nil && c.kind == kindFile && c.flags&(flagUncaptured|flagRacy) == 0 &&
		c.hash == e.hash && c.size == st.Size && c.mtime == st.Mtim.Nano() && c.ctime == st.Ctim.Nano() &&
		c.ino == st.Ino && c.dev == st.Dev && st.Mode&0o7777 == restoreMode(e.mode) &&
		(st.Nlink == 1 || e.flags&flagLinked != 0)
	if keep {
		if st.Mtim.Nano() != e.mtime {
			ts := []unix.Timespec{{Nsec: unix.UTIME_OMIT}, unix.NsecToTimespec(e.mtime)}
			if err := unix.UtimesNanoAt(fd, e.name, ts, unix.AT_SYMLINK_NOFOLLOW); err != nil {
				return fmt.Errorf("%q: %w", a.ds.pathTo(e.name), err)
			}
			step()
		}
	} else if err := a.write(e, live); err != nil {
		return err
	}
	if e.flags&flagLinked != 0 {
		var now unix.Stat_t
		if err := unix.Fstatat(fd, e.name, &now, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return fmt.Errorf("%q: %w", a.ds.pathTo(e.name), err)
		}
		a.firsts[a.ds.pathTo(e.name)] = devIno{now.Dev, now.Ino}
	}
	return nil
}

// write writes e's content to a temporary file beside it, checking it against its
// hash, and renames it into place.
func (a *applier) write(e *entry, live kind) error {
	fd := a.ds.fd()
	src, err := unix.Openat(a.s.objects, e.hash.String(), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("%q: the checkpoint's content is missing from the store: %w", a.ds.pathTo(e.name), err)
	}
	in := os.NewFile(uintptr(src), e.hash.String())
	defer in.Close()
	tmp := tempPrefix + randid.Hex(12)
	dst, err := unix.Openat(fd, tmp, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("%q: %w", a.ds.pathTo(e.name), err)
	}
	out := os.NewFile(uintptr(dst), tmp)
	sum := sha256.New()
	var n int64
	if unix.IoctlFileClone(dst, src) == nil { // a reflink shares the blocks; the hash is still checked
		n, err = io.Copy(sum, out)
	} else {
		n, err = io.Copy(io.MultiWriter(out, sum), in)
	}
	if err == nil && (n != e.size || hash(sum.Sum(nil)) != e.hash) {
		err = fmt.Errorf("the checkpoint's content (object %s) is damaged", e.hash)
	}
	if err == nil {
		err = unix.Fchmod(dst, restoreMode(e.mode))
	}
	if err == nil {
		ts := []unix.Timespec{{Nsec: unix.UTIME_OMIT}, unix.NsecToTimespec(e.mtime)}
		err = unix.UtimesNanoAt(fd, tmp, ts, unix.AT_SYMLINK_NOFOLLOW)
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	step()
	if err != nil {
		unix.Unlinkat(fd, tmp, 0)
		return fmt.Errorf("%q: %w", a.ds.pathTo(e.name), err)
	}
	return a.replace(tmp, e.name, live)
}

// link makes e's name another name of the file e.target, put back before it.
func (a *applier) link(e *entry, st *unix.Stat_t, live kind) error {
	first, ok := a.firsts[e.target]
	if !ok && a.changeOnly {
		first, ok = a.unchangedFirst(e.target)
	}
	if !ok {
		return fmt.Errorf("%q: its first name %q was not put back", a.ds.pathTo(e.name), e.target)
	}
	if live == kindFile && st.Dev == first.dev && st.Ino == first.ino {
		return nil
	}
	ps, name, err := a.openParent(e.target)
	if err != nil {
		return fmt.Errorf("%q: %w", a.ds.pathTo(e.name), err)
	}
	tmp := tempPrefix + randid.Hex(12)
	if err := errors.Join(unix.Linkat(ps.fd(), name, a.ds.fd(), tmp, 0), ps.close()); err != nil {
		unix.Unlinkat(a.ds.fd(), tmp, 0)
		return fmt.Errorf("%q: %w", a.ds.pathTo(e.name), err)
	}
	var now unix.Stat_t
	if err := unix.Fstatat(a.ds.fd(), tmp, &now, unix.AT_SYMLINK_NOFOLLOW); err != nil || now.Dev != first.dev || now.Ino != first.ino {
		unix.Unlinkat(a.ds.fd(), tmp, 0)
		return fmt.Errorf("%q: %w", a.ds.pathTo(e.name), errMoved)
	}
	return a.replace(tmp, e.name, live)
}

// openParent opens the folder holding the workspace path p, from the root, as a stack
// of its own: following no symlink, and lending access to folders their owner, the
// daemon, locked, until it is closed. It returns it with p's last name.
func (a *applier) openParent(p string) (*dirStack, string, error) {
	names := strings.Split(p, "/")
	root := a.ds.frames[0]
	fd, err := unix.Dup(root.fd)
	if err != nil {
		return nil, "", err
	}
	ps := &dirStack{frames: []dirFrame{{fd: fd, dev: root.dev, ino: root.ino}}, lends: a.ds.lends}
	for _, n := range names[:len(names)-1] {
		if _, err := ps.push(n); err != nil {
			return nil, "", errors.Join(err, ps.close())
		}
	}
	return ps, names[len(names)-1], nil
}

// fifo makes e's name a new fifo with e's mode.
func (a *applier) fifo(e *entry, live kind) error {
	fd := a.ds.fd()
	tmp := tempPrefix + randid.Hex(12)
	err := unix.Mkfifoat(fd, tmp, 0o600)
	if err == nil {
		// The mode goes on through a descriptor: a name could be swapped for a link.
		var f int
		if f, err = unix.Openat(fd, tmp, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0); err == nil {
			err = unix.Fchmod(f, restoreMode(e.mode))
			unix.Close(f)
		}
		if err != nil {
			unix.Unlinkat(fd, tmp, 0)
		}
	}
	if err != nil {
		return fmt.Errorf("%q: %w", a.ds.pathTo(e.name), err)
	}
	return a.replace(tmp, e.name, live)
}

// replace renames tmp over name in the top folder, removing a folder there first.
func (a *applier) replace(tmp, name string, live kind) error {
	if live == kindDir {
		if err := a.remove(name); err != nil {
			unix.Unlinkat(a.ds.fd(), tmp, 0)
			return err
		}
	}
	if err := unix.Renameat(a.ds.fd(), tmp, a.ds.fd(), name); err != nil {
		unix.Unlinkat(a.ds.fd(), tmp, 0)
		return fmt.Errorf("%q: %w", a.ds.pathTo(name), err)
	}
	step()
	return nil
}

// remove removes name from the top folder, and all beneath it if it is a folder.
func (a *applier) remove(name string) error {
	if err := removeAt(a.ds, name, a.buf); err != nil {
		return fmt.Errorf("removing %q: %w", a.ds.pathTo(name), err)
	}
	return nil
}

// removeAt removes name from the top folder of ds, and all beneath it, following no
// link. Folders it must empty are lent access first (dirStack.need), as the daemon
// running as its own user may not open one its owner made 000.
func removeAt(ds *dirStack, name string, buf []byte) error {
	var st unix.Stat_t
	if err := unix.Fstatat(ds.fd(), name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if err == unix.ENOENT {
			return nil
		}
		return err
	}
	if kindOf(st.Mode) != kindDir {
		err := unix.Unlinkat(ds.fd(), name, 0)
		step()
		return err
	}
	if _, err := ds.push(name); err != nil {
		return err
	}
	if err := ds.need(0o700); err != nil {
		return errors.Join(err, ds.pop())
	}
	names, err := readNames(ds.fd(), buf)
	for _, n := range names {
		if err = removeAt(ds, n, buf); err != nil {
			break
		}
	}
	if err = errors.Join(err, ds.pop()); err != nil {
		return err
	}
	err = unix.Unlinkat(ds.fd(), name, unix.AT_REMOVEDIR)
	step()
	return err
}

// writable gives the open top folder owner write and search permission, so its
// entries can change, until it is left (dirStack.need).
func (a *applier) writable() error {
	if err := a.ds.need(0o700); err != nil {
		return fmt.Errorf("%q: %w", a.ds.path, err)
	}
	return nil
}

// footprint is the disk a workspace as checkpoint i holds it takes, counted as the
// preview's bound counts it: its content, and each entry MinEntryBytes.
func footprint(i Info) int64 { return i.Bytes + int64(i.Files)*commands.MinEntryBytes }
