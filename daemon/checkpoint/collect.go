package checkpoint

import (
	"encoding/hex"
	"fmt"
	"slices"

	"golang.org/x/sys/unix"
)

// collect applies retention and removes the objects no kept checkpoint refers to. It
// keeps the newest checkpoint and pin (a restore's target) whatever they weigh, then the
// next newest while there are fewer than KeepCount and their objects together stay
// under MaxStoreBytes; the rest are dropped.
//
// A crash at any point leaves a store that is whole: dropped records are removed (and
// that made durable) before any object, and only objects no kept record reaches are
// removed. What a crash leaves behind is garbage the next collection removes.
func (s *Store) collect(pin ID) error {
	marked := map[hash]bool{}
	var total int64
	keep := map[ID]bool{}
	order := slices.Clone(s.ids)
	slices.Reverse(order)
	if _, ok := slices.BinarySearch(s.ids, pin); ok {
		order = append([]ID{pin}, slices.DeleteFunc(order, func(id ID) bool { return id == pin })...)
	}
	full := false
	newest := ID(0)
	if len(s.ids) > 0 {
		newest = s.ids[len(s.ids)-1]
	}
	for _, id := range order {
		if full && id != pin {
			continue
		}
		c, err := s.readRecord(id)
		if err != nil {
			return fmt.Errorf("checkpoint store: %w; remove %s/checkpoints/%s to drop it", err, s.dir, recordName(id))
		}
		var added []hash
		var bytes int64
		err = s.reach(c.root, marked, func(h hash, size int64) error {
			added = append(added, h)
			bytes += size
			return nil
		})
		if err != nil {
			return fmt.Errorf("checkpoint %d is damaged: %w; remove %s/checkpoints/%s to drop it", id, err, s.dir, recordName(id))
		}
		if id != newest && id != pin && (len(keep) >= s.opt.KeepCount || total+bytes > s.opt.MaxStoreBytes) {
			for _, h := range added {
				delete(marked, h)
			}
			full = true
			continue
		}
		keep[id] = true
		total += bytes
	}
	var kept []ID
	for _, id := range s.ids {
		if keep[id] {
			kept = append(kept, id)
			continue
		}
		if err := unix.Unlinkat(s.records, recordName(id), 0); err != nil && err != unix.ENOENT {
			return fmt.Errorf("checkpoint store: dropping checkpoint %d: %w", id, err)
		}
		step()
	}
	s.ids = kept
	if err := unix.Fsync(s.records); err != nil {
		return fmt.Errorf("checkpoint store: %w", err)
	}
	names, err := s.list(s.objects)
	if err != nil {
		return fmt.Errorf("checkpoint store: %w", err)
	}
	for _, n := range names {
		var h hash
		if b, err := hex.DecodeString(n); err == nil && len(b) == len(h) {
			copy(h[:], b)
			if marked[h] {
				continue
			}
		}
		if err := unix.Unlinkat(s.objects, n, 0); err != nil && err != unix.ENOENT {
			return fmt.Errorf("checkpoint store: removing object %s: %w", n, err)
		}
		step()
	}
	s.bytes = total
	return nil
}

// reach calls found for every object the tree root reaches that seen lacks (adding it
// there), with its size: a tree as stored, a file's content as captured.
func (s *Store) reach(root hash, seen map[hash]bool, found func(h hash, size int64) error) error {
	if seen[root] {
		return nil
	}
	b, err := readAt(s.objects, root.String())
	if err != nil {
		return fmt.Errorf("folder listing %s: %w", root, err)
	}
	t, err := decodeTree(b)
	if err != nil {
		return fmt.Errorf("folder listing %s: %w", root, err)
	}
	seen[root] = true
	if err := found(root, int64(len(b))); err != nil {
		return err
	}
	return s.reachIn(t, seen, found)
}

// reachIn is reach for the entries of t.
func (s *Store) reachIn(t tree, seen map[hash]bool, found func(h hash, size int64) error) error {
	for i := range t {
		e := &t[i]
		switch {
		case e.kind == kindDir && e.flags&flagInline != 0 && e.captured():
			sub, err := s.subtree(e)
			if err == nil {
				err = s.reachIn(sub, seen, found)
			}
			if err != nil {
				return err
			}
		case !e.hasHash():
		case e.kind == kindDir:
			if err := s.reach(e.hash, seen, found); err != nil {
				return err
			}
		case !seen[e.hash]:
			seen[e.hash] = true
			if err := found(e.hash, e.size); err != nil {
				return err
			}
		}
	}
	return nil
}
