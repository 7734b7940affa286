package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// ChangedError is RestoreFrom's answer when the workspace is not as the checkpoint it
// was to start from holds it: Diff says what changed since (From is that checkpoint,
// To the one taken of the workspace now), and when Diff lists nothing, Restamped names
// the first path whose time, owner, extended attributes or other names changed.
// Nothing was changed.
type ChangedError struct {
	Diff      *Diff
	Restamped string
}

func (e *ChangedError) Error() string {
	return fmt.Sprintf("the workspace changed since checkpoint %d (%s), so nothing was applied", e.Diff.From, e.What())
}

// What says what changed in a few words: the diff's summary, or the path restamped.
func (e *ChangedError) What() string {
	if e.Diff.Files+e.Diff.Folders == 0 && e.Restamped != "" {
		return "the time, owner, extended attributes or links of " + displayPath(e.Restamped) + " changed"
	}
	return e.Diff.Summary()
}

// RestoreFrom applies a change worked out elsewhere (an effect preview ran a command on
// a copy of checkpoint from, and to is that copy after it) to the workspace ws: only the
// paths that differ from checkpoint from to to are written, one by one, and only when
// ws is exactly as checkpoint from holds it — content, types, modes, and also file
// times, owners, extended attributes and other names — checked on a capture that walks
// the whole workspace, under the store's lock. The names skip in the top folder are left
// out of both: neither checked nor changed. A workspace already at to is left as it is
// (a restore a crash interrupted was finished since: applying again is harmless).
// Otherwise it returns a *ChangedError and changes nothing.
func (s *Store) RestoreFrom(ctx context.Context, ws string, from, to ID, skip ...string) (*Restored, error) {
	err := s.begin(ctx)
	defer s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	f, err := s.readRecord(from)
	if err != nil {
		return nil, err
	}
	return s.restore(ctx, ws, to, &delta{from: from, root: f.root, skip: skip})
}

// delta is the change RestoreFrom applies: the difference from checkpoint from (tree
// root) to a restore's target, without the top folder's names skip.
type delta struct {
	from ID
	root hash
	skip []string
}

// sameTree reports whether trees a and b hold the same paths, types, modes and
// contents (their stat data may differ), the top folder's names skip left out.
func (s *Store) sameTree(a, b hash, skip ...string) bool {
	d, err := s.diff(a, b, skip...)
	return err == nil && d.Files+d.Folders == 0
}

// unchanged returns a *ChangedError unless before, the workspace just captured, holds
// exactly what checkpoint ch.from does, save the names ch.skip.
func (s *Store) unchanged(before Info, ch *delta) error {
	if before.root == ch.root {
		return nil
	}
	// The trees also differ in stat data no one changed (a file just written is marked
	// racy): what counts is a change a diff shows, or one to what restamped compares.
	d, err := s.diff(ch.root, before.root, ch.skip...)
	if err != nil {
		return err
	}
	d.From, d.To = ch.from, before.ID
	if d.Files+d.Folders > 0 {
		return &ChangedError{Diff: d}
	}
	t, err := readEach(s.readTree, ch.root, before.root)
	if err != nil {
		return err
	}
	p, err := s.restamped(t[0], t[1], nameSet(ch.skip))
	if err != nil || p == "" {
		return err
	}
	return &ChangedError{Diff: d, Restamped: p}
}

// applyChange writes into the workspace only what differs from checkpoint j.from to
// checkpoint j.to, path by path, then syncs its filesystem; a path the change does not
// name is not even looked at. Run again after a crash, it finishes the job: each path
// is made what j.to says, whatever it holds.
func (s *Store) applyChange(j *journal) (notices, error) {
	a := &applier{s: s, buf: make([]byte, 32<<10), firsts: map[string]devIno{}, changeOnly: true}
	var trees [2]tree
	for i, id := range []ID{j.from, j.to} {
		c, err := s.readRecord(id)
		if err == nil {
			trees[i], err = s.readTree(c.root)
		}
		if err != nil {
			return a.notes, err
		}
	}
	return a.notes, a.in(j.ws, func() error { return a.changes(trees[0], trees[1], nameSet(j.skip)) })
}

// changes makes the names of the top folder that differ from tree from to tree to
// what to says (changeOf decides, as for a diff), descending only into folders that
// hold a change; skip names what is left out in this folder.
func (a *applier) changes(from, to tree, skip map[string]bool) error {
	names, err := readNames(a.ds.fd(), a.buf)
	if err != nil {
		return fmt.Errorf("listing %q: %w", a.ds.path, err)
	}
	for _, n := range names { // what an apply a crash interrupted left half-written here
		if strings.HasPrefix(n, tempPrefix) && from.find(n) == nil && to.find(n) == nil {
			if err := a.remove(n); err != nil {
				return err
			}
		}
	}
	for i := range from {
		if n := from[i].name; !skip[n] && to.find(n) == nil {
			if err := a.remove(n); err != nil {
				return err
			}
		}
	}
	for i := range to {
		e := &to[i]
		f := from.find(e.name)
		if skip[e.name] || f != nil && changeOf(f, e) == "" && (e.kind != kindDir || sameFolder(f, e)) {
			continue
		}
		var st unix.Stat_t
		err := unix.Fstatat(a.ds.fd(), e.name, &st, unix.AT_SYMLINK_NOFOLLOW)
		if f == nil || f.kind != kindDir || e.kind != kindDir || !f.captured() || !e.captured() || err != nil || kindOf(st.Mode) != kindDir {
			err = a.entry(e, nil, &st, err)
		} else {
			err = a.within(f, e, &st)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// within applies the change inside the folder that is f in the tree changed from and
// e in the tree changed to (stat st), then gives it e's mode.
func (a *applier) within(f, e *entry, st *unix.Stat_t) error {
	pst, err := a.ds.push(e.name)
	if err != nil {
		return fmt.Errorf("%q: %w", a.ds.pathTo(e.name), err)
	}
	if pst.Dev != st.Dev || pst.Ino != st.Ino {
		err = errMoved
	}
	if err == nil {
		err = a.writable()
	}
	var ft, et tree
	if err == nil {
		ft, err = a.s.subtree(f)
	}
	if err == nil {
		et, err = a.s.subtree(e)
	}
	if err == nil {
		err = a.changes(ft, et, nil)
	}
	if want := restoreMode(e.mode); err == nil && pst.Mode&0o7777 != want {
		a.ds.setMode(want)
		step()
	}
	return errors.Join(err, a.ds.pop())
}

// RemoveTree removes name in the folder dir and everything beneath it as a restore
// does: following no link, a folder made writable before it is emptied.
func RemoveTree(dir, name string) error {
	ds, err := openRoot(dir, nil)
	if err != nil {
		return err
	}
	defer ds.close()
	if err := removeAt(ds, name, make([]byte, 32<<10)); err != nil {
		return fmt.Errorf("removing %s: %w", filepath.Join(dir, name), err)
	}
	return nil
}

// unchangedFirst finds the file at the workspace path p, a new name's first name that
// the change does not touch: the stale check found it as the change's first checkpoint
// holds it, so it is the file to link.
func (a *applier) unchangedFirst(p string) (devIno, bool) {
	ps, name, err := a.openParent(p)
	if err != nil {
		return devIno{}, false
	}
	var st unix.Stat_t
	err = unix.Fstatat(ps.fd(), name, &st, unix.AT_SYMLINK_NOFOLLOW)
	if errors.Join(err, ps.close()) != nil || kindOf(st.Mode) != kindFile {
		return devIno{}, false
	}
	return devIno{st.Dev, st.Ino}, true
}

// readEach reads each of keys with read, in their order.
func readEach[K, V any](read func(K) (V, error), keys ...K) ([]V, error) {
	out := make([]V, len(keys))
	for i, k := range keys {
		var err error
		if out[i], err = read(k); err != nil {
			return nil, err
		}
	}
	return out, nil
}
