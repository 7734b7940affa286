package checkpoint

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"os"
	"slices"

	"golang.org/x/sys/unix"
)

// Hold makes retention keep the checkpoints ids whatever KeepCount and MaxStoreBytes
// say, until the next Hold: the daemon holds the checkpoints taken before an agent's
// last steps, so that many cheap steps cannot push a bad step out of rewind range. The
// store may then take more than MaxStoreBytes, by what the held checkpoints need.
func (s *Store) Hold(ids []ID) {
	held := make(map[ID]bool, len(ids))
	for _, id := range ids {
		held[id] = true
	}
	s.mu.Lock()
	s.held = held
	s.mu.Unlock()
}

// Size is what the store's objects take on disk, as the store counts them (content and
// listings, without the file system's blocks): what retention weighs against
// MaxStoreBytes. It waits for a collection still running.
func (s *Store) Size() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.collecting.Wait()
	return s.bytes
}

// collect applies retention and removes the objects no kept checkpoint refers to. It
// keeps the newest checkpoint, pin (a restore's target) and the held ones (Hold)
// whatever they weigh, then the next newest while there are fewer than nine tenths of
// KeepCount and their objects together stay under nine tenths of MaxStoreBytes; the
// rest are dropped.
//
// A crash at any point leaves a store that is whole: dropped records are removed (and
// that made durable) before any object, and only objects no kept record reaches are
// removed. What a crash leaves behind is garbage the next collection removes.
func (s *Store) collect(pin ID, held map[ID]bool) error {
	marked := map[hash]bool{}
	var total int64
	keep := map[ID]bool{}
	order := slices.Clone(s.ids)
	slices.Reverse(order)
	if _, ok := slices.BinarySearch(s.ids, pin); ok {
		order = append([]ID{pin}, slices.DeleteFunc(order, func(id ID) bool { return id == pin })...)
	}
	full := false
	keepCount := s.opt.KeepCount - s.opt.KeepCount/10
	keepBytes := s.opt.MaxStoreBytes - s.opt.MaxStoreBytes/10
	newest := ID(0)
	if len(s.ids) > 0 {
		newest = s.ids[len(s.ids)-1]
	}
	for _, id := range order {
		if full && id != pin && !held[id] {
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
		if id != newest && id != pin && !held[id] && (len(keep) >= keepCount || total+bytes > keepBytes) {
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
	if err := s.fsync(s.records); err != nil {
		return fmt.Errorf("checkpoint store: %w", err)
	}
	names, err := listFolder(s.objects)
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
		if err := unlinkFreed(s.objects, n); err != nil && err != unix.ENOENT {
			return fmt.Errorf("checkpoint store: removing object %s: %w", n, err)
		}
		step()
	}
	s.bytes, s.kept = total, total
	return nil
}

// reach calls found for every object the tree root reaches that seen lacks (adding it
// there), with its size: a tree as stored, a file's content as captured. It reads each
// tree once into a buffer per depth and copies nothing out of it: collection reads
// every tree of every checkpoint kept.
func (s *Store) reach(root hash, seen map[hash]bool, found func(h hash, size int64) error) error {
	var bufs [][]byte
	var object func(h hash, depth int) error
	var scan func(b []byte, depth int) error
	object = func(h hash, depth int) error {
		if seen[h] {
			return nil
		}
		if depth == len(bufs) {
			bufs = append(bufs, make([]byte, 0, 16<<10))
		}
		b, err := readInto(s.objects, h.String(), bufs[depth][:0])
		if err != nil {
			return fmt.Errorf("folder listing %s: %w", h, err)
		}
		bufs[depth] = b
		seen[h] = true
		if err := found(h, int64(len(b))); err != nil {
			return err
		}
		if err := scan(b, depth); err != nil {
			return fmt.Errorf("folder listing %s: %w", h, err)
		}
		return nil
	}
	scan = func(b []byte, depth int) error {
		return scanTree(b, false, func(x *entry, inline []byte) error {
			switch {
			case !x.captured():
			case inline != nil:
				return scan(inline, depth)
			case x.kind == kindDir:
				return object(x.hash, depth+1)
			case x.kind == kindFile && !seen[x.hash]:
				seen[x.hash] = true
				return found(x.hash, x.size)
			}
			return nil
		})
	}
	return object(root, 0)
}

// room is what a capture's new content may take: the store's hard cap (twice
// MaxStoreBytes, which held checkpoints may pass) less what it keeps, and the free space
// of the state dir's file system above MinFreeBytes, each read once per capture.
type room struct {
	cap, free int64
}

// roomFor says why n bytes of new content cannot be kept, or "" when they can.
func (c *capture) roomFor(n int64) string {
	s := c.s
	if c.room == nil {
		c.room = &room{cap: 1<<63 - 1, free: 1<<63 - 1}
		if s.opt.MaxStoreBytes < 1<<62 {
			c.room.cap = 2*s.opt.MaxStoreBytes - s.bytes
		}
		var st unix.Statfs_t
		if s.opt.MinFreeBytes >= 0 && unix.Fstatfs(s.tm, &st) == nil {
			c.room.free = int64(st.Bavail)*int64(st.Bsize) - max(s.opt.MinFreeBytes, 0)
		}
	}
	switch {
	case n > c.room.cap:
		return fmt.Sprintf("would take the checkpoint store past its hard limit of %d bytes (twice its bound, which the latest steps' checkpoints may pass): "+
			"rewind range is kept, new content is not; lower [checkpoints] keep_steps or raise max_bytes", 2*s.opt.MaxStoreBytes)
	case n > c.room.free:
		return fmt.Sprintf("would leave the state dir's file system (%s) less than %d bytes free: free disk there", s.dir, s.opt.MinFreeBytes)
	}
	return ""
}

// sparseBlock is the unit writeSparse leaves as a hole when it holds only zeros.
const sparseBlock = 4096

// writeSparse writes b at offset off of out, leaving the blocks of zeros unwritten (a
// hole, read back as zeros), so that a sparse file costs the store what it costs the
// workspace; copyTemp truncates out to its full size at the end.
func writeSparse(out *os.File, b []byte, off int64) error {
	var zero [sparseBlock]byte
	for len(b) > 0 {
		k := min(len(b), sparseBlock)
		if !bytes.Equal(b[:k], zero[:k]) {
			if _, err := out.WriteAt(b[:k], off); err != nil {
				return err
			}
		}
		b, off = b[k:], off+int64(k)
	}
	return nil
}
