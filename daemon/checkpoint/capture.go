package checkpoint

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentd/agentd/commands"
)

// Checkpoint captures the workspace ws and returns the checkpoint, durable on disk
// (through kill -9 and power loss) by the time it returns. Only what changed since the
// latest checkpoint is read: a file whose size, times and inode are unchanged keeps its
// content hash, as git's index does; when nothing changed at all, the latest checkpoint
// is returned as it is and nothing is written.
//
// Content past the Options' bounds, and files that cannot be read, are not captured: the
// checkpoint is then Partial and its notices name them (Info.Problem says it in one
// sentence). Fifos, sockets and devices are recorded without content. An error means
// no checkpoint was taken: the step cannot be rewound.
func (s *Store) Checkpoint(ctx context.Context, ws string) (Info, error) {
	err := s.begin(ctx)
	defer s.mu.Unlock()
	if err != nil {
		return Info{}, err
	}
	return s.checkpoint(ctx, ws, 0, false)
}

// CheckpointWithin is Checkpoint with the new content it may add bounded by maxNew as
// well as by MaxStepBytes: past it the checkpoint is Partial and says so. An effect
// preview bounds the store by the disk its budget leaves, counting files at their full
// size, as the store keeps them, not by the blocks a sparse file takes. With ov, ws is
// an overlay mount and only what its upper layer holds is read (Overlay).
func (s *Store) CheckpointWithin(ctx context.Context, ws string, maxNew int64, ov *Overlay) (Info, error) {
	err := s.begin(ctx)
	defer s.mu.Unlock()
	if err != nil {
		return Info{}, err
	}
	s.stepCap = max(maxNew, 0)
	defer func() { s.stepCap = -1 }()
	if ov != nil {
		return ov.checkpoint(ctx, s, ws)
	}
	return s.checkpoint(ctx, ws, 0, false)
}

// maxStep is what one checkpoint of s may add now: MaxStepBytes, or less during
// CheckpointWithin.
func maxStep(s *Store) int64 {
	if s.stepCap >= 0 {
		return min(s.stepCap, s.opt.MaxStepBytes)
	}
	return s.opt.MaxStepBytes
}

// checkpoint takes a checkpoint; retention keeps pin (a restore's target) whatever it
// drops. walk says not to trust the inotify fast path.
func (s *Store) checkpoint(ctx context.Context, ws string, pin ID, walk bool) (Info, error) {
	var latest, prev *Info
	if n := len(s.ids); n > 0 {
		if c, err := s.readRecord(s.ids[n-1]); err == nil {
			latest, prev = &c, &c
		}
	}
	if latest != nil && !walk && s.watch.unchanged(ws, latest.ID) {
		return *latest, nil // no event since it was taken: no walk
	}
	// The stat data worth trusting are ws's own: a store that also captures other
	// folders (an effect preview's copies) would otherwise read every file again.
	if id, ok := s.lastOf[ws]; ok && latest != nil && id != latest.ID {
		if c, err := s.readRecord(id); err == nil {
			prev = &c
		}
	}
	s.watch.begin(ws)
	s.walks++
	c, err := s.capture(ctx, ws, prev, nil)
	if err != nil {
		return Info{}, fmt.Errorf("checkpoint of %s: %w", ws, err)
	}
	if latest != nil && c.root == latest.root {
		c.discard()
		noteLast(s.lastOf, ws, latest.ID)
		s.watch.end(latest.ID, c.manyNames)
		return *latest, nil
	}
	info, err := c.commit(pin)
	if err != nil {
		return Info{}, fmt.Errorf("checkpoint of %s: %w", ws, err)
	}
	noteLast(s.lastOf, ws, info.ID)
	s.watch.end(info.ID, c.manyNames)
	return info, nil
}

// noteLast keeps id as the latest checkpoint of ws in last (Store.lastOf). The map is a
// cache of a few folders (a workspace and its preview's view); a folder whose path
// changes each time (a view under /proc/PID/root) would grow it without end, so past
// lastOfMax it starts afresh.
func noteLast(last map[string]ID, ws string, id ID) {
	if _, ok := last[ws]; !ok && len(last) >= lastOfMax {
		clear(last)
	}
	last[ws] = id
}

// lastOfMax bounds Store.lastOf.
const lastOfMax = 16

// capture is one walk of a workspace into the store's tmp folder; flush makes what it
// wrote objects.
type capture struct {
	s     *Store
	ctx   context.Context
	ds    *dirStack
	w     *watcher // the store's, told of every folder listed; nil for an overlay's
	ov    *overlay // what an overlay's upper layer holds (CheckpointOverlay); nil: read all
	buf   []byte   // folder listings
	data  []byte   // small files
	start int64    // when the walk began (ns): files changed since are racy

	root     hash
	files    int
	entries  int   // files and folders, against MaxEntries
	stamped  int   // entries the stamps of folders past MaxEntries walked, against MaxEntries too
	bytes    int64 // content captured
	newBytes int64 // objects written
	newBlobs int64 // content written, against MaxStepBytes
	partial  bool
	linked   bool // a file's second name was found
	// manyNames: some file has several names, maybe outside the folders watched
	manyNames bool
	notes     notices

	seen    map[hash]bool // objects known to be in the store or pending
	pending []pendingObject
	links   map[devIno]firstName
	store   devIno // the store's folder, which must not be in the workspace
	room    *room  // what new content may take beside the store's hard cap and free-space floor
}

type devIno struct{ dev, ino uint64 }

// firstName is the first name found of a file with several (a hard link).
type firstName struct {
	path string
	e    entry
}

type pendingObject struct {
	tmp  string
	h    hash
	size int64
}

// smallFile is the size up to which a file is read into memory whole.
const smallFile = 256 << 10

// racyWindow: a file changed this close before the walk began may change again within
// the same timestamp tick after being read (git's "racily clean" entries), so its stat
// data is not trusted next time. Filesystems that keep whole seconds need two.
const (
	racyWindow       = 50 * time.Millisecond
	racyWindowCoarse = 2 * time.Second
)

// capture walks ws, with the tree of prev (if any) as the stat cache; with ov, ws is an
// overlay whose lower layer prev holds exactly, and only what ov's upper layer holds is
// read.
func (s *Store) capture(ctx context.Context, ws string, prev *Info, ov *overlay) (*capture, error) {
	ds, err := openRoot(ws, newLendLog(s, ws))
	if err != nil {
		return nil, err
	}
	defer ds.close()
	c := &capture{s: s, ctx: ctx, ds: ds, w: s.watch, ov: ov, buf: make([]byte, 32<<10), start: time.Now().UnixNano(),
		seen: map[hash]bool{}, links: map[devIno]firstName{}}
	if ov != nil {
		c.w = nil
	}
	c.w.top(devIno{ds.frames[0].dev, ds.frames[0].ino})
	c.w.add(ds.fd())
	var st unix.Stat_t
	if err := unix.Fstat(s.root, &st); err != nil {
		return nil, err
	}
	c.store = devIno{st.Dev, st.Ino}
	if root := ds.frames[0]; (devIno{root.dev, root.ino}) == c.store {
		return nil, errStoreInside
	}
	var pt tree
	var ph *hash
	if prev != nil {
		if t, err := s.readTree(prev.root); err == nil { // else: no cache, everything is read
			pt, ph = t, &prev.root
		}
	}
	t, same, err := c.dir(nil, pt, ph != nil)
	if err == nil && same {
		c.root = *ph
	} else if err == nil {
		b := encodeTree(t)
		c.root = sha256.Sum256(b)
		err = c.put(c.root, b)
	}
	if err != nil {
		c.discard()
		return nil, err
	}
	return c, nil
}

// dir captures the top folder of the stack and returns its tree; same says it is prev,
// the folder's tree in the previous checkpoint (hasPrev: there is one). A folder that
// cannot be listed makes e uncaptured; for the root (e nil) it is an error. Errors are
// the store's or the context's: they end the capture.
func (c *capture) dir(e *entry, prev tree, hasPrev bool) (t tree, same bool, err error) {
	if err := c.ctx.Err(); err != nil {
		return nil, false, err
	}
	names, err := readNames(c.ds.fd(), c.buf)
	if err != nil {
		if e == nil {
			return nil, false, fmt.Errorf("listing the workspace: %w", err)
		}
		c.uncapture(e, "cannot be listed: "+err.Error())
		return nil, false, nil
	}
	upper := c.ov.names() // nil: every name is read
	var stats []unix.Stat_t
	var errs []error
	if upper == nil {
		stats, errs = statAll(c.ds.fd(), names)
	}
	t = make(tree, 0, len(names))
	j := 0
	for i, name := range names {
		for j < len(prev) && prev[j].name < name {
			j++
		}
		var p *entry
		if j < len(prev) && prev[j].name == name {
			p = &prev[j]
		}
		if upper != nil && !upper[name] && p != nil { // the lower layer's: as prev holds it
			if err := c.count(p); err != nil {
				return nil, false, err
			}
			t = append(t, *p)
			continue
		}
		var st unix.Stat_t
		var err error
		if upper == nil {
			st, err = stats[i], errs[i]
		} else {
			err = unix.Fstatat(c.ds.fd(), name, &st, unix.AT_SYMLINK_NOFOLLOW)
		}
		x, ok, err := c.entry(name, p, &st, err)
		if err != nil {
			return nil, false, err
		}
		if ok {
			t = append(t, x)
		}
	}
	return t, hasPrev && slices.Equal(t, prev), nil
}

// entry captures name in the top folder; ok is false when it is gone since listed.
func (c *capture) entry(name string, p *entry, st *unix.Stat_t, err error) (e entry, ok bool, _ error) {
	e.name = name
	if err != nil {
		if err == unix.ENOENT {
			return e, false, nil
		}
		e.kind = kindUnknown
		c.uncapture(&e, "cannot be looked at: "+err.Error())
		return e, true, nil
	}
	e.kind, e.mode = kindOf(st.Mode), st.Mode&0o7777
	e.uid, e.gid, e.flags = st.Uid, st.Gid, e.flags|flagMeta
	if e.kind == kindDir || e.kind == kindSymlink {
		e.mtime, e.flags = st.Mtim.Nano(), e.flags|flagStamped
	}
	if e.kind != kindDir {
		c.files++
	}
	if c.entries++; c.entries > c.s.opt.MaxEntries {
		c.uncapture(&e, fmt.Sprintf("is past the %d files and folders a checkpoint captures", c.s.opt.MaxEntries))
		if e.kind == kindDir && c.ov == nil { // an overlay's capture past the bound walks again whole
			return e, true, c.stamp(&e, st)
		}
		return e, true, nil
	}
	switch e.kind {
	case kindFile:
		err = c.file(&e, st, p)
	case kindDir:
		err = c.folder(&e, st, p)
	case kindSymlink:
		if e.target, err = readLink(c.ds.fd(), name, st.Size); err != nil {
			c.uncapture(&e, "cannot be read: "+err.Error())
			err = nil
		}
	case kindFifo:
		c.notes.add(c.ds.pathTo(name), "is a fifo: recorded without content (a restore makes a new one)", false)
	case kindSocket:
		c.notes.add(c.ds.pathTo(name), "is a socket: recorded without its program (a restore makes the socket, which nothing listens on)", false)
	case kindDevice:
		c.notes.add(c.ds.pathTo(name), "is a device: recorded without its number (a restore keeps a device there, or removes what replaced it)", false)
	default:
		c.uncapture(&e, "is of an unknown type")
	}
	return e, true, err
}

// statAll stats the names in the folder fd, following no symlink.
func statAll(fd int, names []string) ([]unix.Stat_t, []error) {
	stats, errs := make([]unix.Stat_t, len(names)), make([]error, len(names))
	for i, name := range names {
		errs[i] = unix.Fstatat(fd, name, &stats[i], unix.AT_SYMLINK_NOFOLLOW)
	}
	return stats, errs
}

var errStoreInside = errors.New("the checkpoint store is inside the workspace, where the agent could change it: give the store a folder outside every workspace")

// folder captures the folder e (stat st), with p its entry in the previous checkpoint.
func (c *capture) folder(e *entry, st *unix.Stat_t, p *entry) error {
	if (devIno{st.Dev, st.Ino}) == c.store {
		return errStoreInside
	}
	if _, err := c.ds.push(e.name); err != nil {
		c.uncapture(e, "cannot be opened: "+err.Error())
		return nil
	}
	c.w.add(c.ds.fd()) // before listing it: a change from now on queues an event
	c.ov.push(e.name)
	defer c.ov.pop()
	keepXattrs(e, c.ds.fd())
	var pt tree
	hasPrev := false
	if p != nil && p.kind == kindDir && p.captured() {
		if t, err := c.s.subtree(p); err == nil {
			pt, hasPrev = t, true
		}
	}
	t, same, err := c.dir(e, pt, hasPrev)
	if err := errors.Join(err, c.ds.pop()); err != nil || !e.captured() {
		return err
	}
	if same {
		e.hash, e.inline, e.flags = p.hash, p.inline, e.flags|p.flags&flagInline
		return nil
	}
	b := encodeTree(t)
	e.hash = sha256.Sum256(b)
	if len(b) <= inlineMax {
		e.inline, e.flags = string(b), e.flags|flagInline
		return nil
	}
	return c.put(e.hash, b)
}

// file captures the regular file e (stat st), with p its entry in the previous checkpoint.
func (c *capture) file(e *entry, st *unix.Stat_t, p *entry) error {
	e.size, e.mtime, e.ctime, e.ino, e.dev = st.Size, st.Mtim.Nano(), st.Ctim.Nano(), st.Ino, st.Dev
	if racy(e, c.start) {
		e.flags |= flagRacy
	}
	if st.Nlink > 1 {
		c.manyNames = true
		e.flags |= flagLinked
		key := devIno{st.Dev, st.Ino}
		if first, ok := c.links[key]; ok {
			e.target, c.linked = first.path, true
			if first.e.captured() {
				e.hash = first.e.hash
			} else {
				c.uncapture(e, "is a hard link of "+displayPath(first.path)+", which was not captured")
			}
			return nil
		}
		defer func() { c.links[key] = firstName{c.ds.pathTo(e.name), *e} }()
	}
	lim := c.s.opt
	switch {
	case e.size > lim.MaxFileBytes:
		c.uncapture(e, fmt.Sprintf("is %d bytes, over the limit of %d bytes per file", e.size, lim.MaxFileBytes))
		return nil
	case c.bytes+e.size > lim.MaxStoreBytes:
		c.uncapture(e, fmt.Sprintf("would take the workspace's captured content past the store's limit of %d bytes", lim.MaxStoreBytes))
		return nil
	}
	// A change to the attributes or owner moves ctime too: they are kept with the hash.
	if p != nil && p.kind == kindFile && p.flags&(flagUncaptured|flagRacy|flagMeta) == flagMeta && p.size == e.size &&
		p.mtime == e.mtime && p.ctime == e.ctime && p.ino == e.ino && p.dev == e.dev {
		e.hash, e.xattrs, e.xattrSet, e.flags = p.hash, p.xattrs, p.xattrSet, e.flags|p.flags&flagXattrs
		c.bytes += e.size
		return nil
	}
	return c.read(e)
}

// racy says whether e changed too close to start for its stat data to stand for its content.
func racy(e *entry, start int64) bool {
	w := racyWindow
	if e.ctime%int64(time.Second) == 0 && e.mtime%int64(time.Second) == 0 {
		w = racyWindowCoarse
	}
	return e.ctime >= start-int64(w) || e.mtime >= start-int64(w)
}

// read reads the file e, hashes it and keeps its content if the store lacks it.
func (c *capture) read(e *entry) error {
	fd, err := openFile(c.ds, e)
	if err != nil {
		c.uncapture(e, "cannot be read: "+err.Error())
		return nil
	}
	f := os.NewFile(uintptr(fd), e.name)
	defer f.Close()
	if !c.sameFile(f, e) {
		c.uncapture(e, "changed while it was read")
		return nil
	}
	var tmp string
	var h hash
	var n int64
	if e.size <= smallFile {
		if cap(c.data) < int(e.size)+1 {
			c.data = make([]byte, max(int(e.size)+1, 4<<10))
		}
		var m int
		m, err = io.ReadFull(f, c.data[:e.size+1])
		if err == io.ErrUnexpectedEOF || err == io.EOF {
			err = nil
		}
		n, h = int64(m), sha256.Sum256(c.data[:m])
	} else {
		tmp, n, h, err = c.copyTemp(f, e.size+1)
	}
	if err == nil && (n != e.size || !c.sameFile(f, e)) {
		err = errChanged
	}
	if err != nil {
		if tmp != "" {
			unix.Unlinkat(c.s.tm, tmp, 0)
		}
		var se storeError
		if errors.As(err, &se) {
			return se.error
		}
		if err != errChanged {
			err = fmt.Errorf("cannot be read: %w", err)
		}
		c.uncapture(e, err.Error())
		return nil
	}
	e.hash = h
	c.bytes += e.size
	if c.have(h) {
		if tmp != "" {
			unix.Unlinkat(c.s.tm, tmp, 0)
		}
		return nil
	}
	why := c.roomFor(c.newBlobs + e.size)
	if limit := maxStep(c.s); c.newBlobs+e.size > limit {
		why = fmt.Sprintf("would take this checkpoint's new content past its limit of %d bytes", limit)
	}
	if why != "" {
		if tmp != "" {
			unix.Unlinkat(c.s.tm, tmp, 0)
		}
		c.bytes -= e.size
		c.uncapture(e, why)
		return nil
	}
	if tmp == "" {
		if tmp, err = c.s.writeTemp(c.data[:n], false); err != nil {
			return err
		}
	}
	c.newBlobs += e.size
	c.keep(tmp, h, e.size)
	return nil
}

// errChanged: the file's size or times moved while it was read.
var errChanged = errors.New("changed while it was read")

// storeError marks an error writing the store (which ends the capture) among errors
// reading the workspace (which leave one file uncaptured).
type storeError struct{ error }

// copyTemp copies at most limit bytes of f to a new temporary file, hashing them.
func (c *capture) copyTemp(f *os.File, limit int64) (tmp string, n int64, h hash, err error) {
	tmp, out, err := c.s.createTemp()
	if err != nil {
		return "", 0, h, storeError{err}
	}
	defer out.Close()
	sum := sha256.New()
	buf := make([]byte, 256<<10)
	for n < limit {
		m, rerr := f.Read(buf[:min(int64(len(buf)), limit-n)])
		if m > 0 {
			sum.Write(buf[:m])
			if werr := writeSparse(out, buf[:m], n); werr != nil {
				return tmp, n, h, storeError{werr}
			}
			n += int64(m)
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return tmp, n, h, rerr
		}
	}
	sum.Sum(h[:0])
	if err := out.Truncate(n); err != nil { // a hole at the end has a size too
		return tmp, n, h, storeError{err}
	}
	step()
	return tmp, n, h, nil
}

// sameFile reports whether the open f is still the file e was statted as.
func (c *capture) sameFile(f *os.File, e *entry) bool {
	var st unix.Stat_t
	return unix.Fstat(int(f.Fd()), &st) == nil && kindOf(st.Mode) == kindFile && st.Ino == e.ino &&
		st.Dev == e.dev && st.Size == e.size && st.Mtim.Nano() == e.mtime && st.Ctim.Nano() == e.ctime
}

// put keeps the object b (a tree) unless the store has it.
func (c *capture) put(h hash, b []byte) error {
	if c.have(h) {
		return nil
	}
	tmp, err := c.s.writeTemp(b, false)
	if err != nil {
		return err
	}
	c.keep(tmp, h, int64(len(b)))
	return nil
}

func (c *capture) keep(tmp string, h hash, size int64) {
	// What the store takes while a command runs is the daemon's, not the command's.
	var st unix.Stat_t
	if unix.Fstatat(c.s.tm, tmp, &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
		commands.ExplainGrowth(st.Dev, st.Blocks*512)
	}
	c.pending = append(c.pending, pendingObject{tmp, h, size})
	c.seen[h] = true
	c.newBytes += size
}

// have reports whether the object h is in the store or pending.
func (c *capture) have(h hash) bool {
	if c.seen[h] {
		return true
	}
	if c.s.hasObject(h) {
		c.seen[h] = true
		return true
	}
	return false
}

// uncapture marks e as not captured, and the capture as partial.
func (c *capture) uncapture(e *entry, why string) {
	e.flags |= flagUncaptured
	e.flags &^= flagRacy
	e.hash, e.note = hash{}, why
	c.partial = true
	c.notes.add(c.ds.pathTo(e.name), why, true)
}
