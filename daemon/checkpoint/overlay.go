package checkpoint

import (
	"context"
	"fmt"

	"golang.org/x/sys/unix"
)

// Overlay says, for CheckpointWithin, that the folder captured is an overlay mount
// whose lower layer holds checkpoint Lower exactly and whose upper layer, where every
// write to it went, is the folder Upper: only the names the upper layer holds are read,
// and the rest is Lower's entries as they are, so a change costs what it wrote, not the
// tree. A folder the upper layer marks opaque or redirected (its lower entries are not
// Lower's there) is read whole, and so is the whole mount when Lower is Partial or has a
// file with several names (a copy-up parts them), or when what it holds is past the
// Options' bounds (the walk then says which paths it left out). A checkpoint that
// holds what Lower does is Lower.
type Overlay struct {
	Upper string
	Lower ID
}

// checkpoint is s.CheckpointWithin of the overlay mount merged, under s.mu.
func (o *Overlay) checkpoint(ctx context.Context, s *Store, merged string) (Info, error) {
	b, err := s.readRecord(o.Lower)
	if err != nil || b.Partial || b.links {
		return s.checkpoint(ctx, merged, 0, false)
	}
	up, err := unix.Open(o.Upper, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		// A command that took its root's modes away shuts a daemon that is not root out of
		// the upper layer, which it cannot lend modes to as the walk does: read it whole.
		return s.checkpoint(ctx, merged, 0, false)
	}
	ov := &overlay{frames: []int{up}, buf: make([]byte, 32<<10)}
	defer ov.close()
	c, err := s.capture(ctx, merged, &b, ov)
	switch {
	case err != nil:
		return Info{}, fmt.Errorf("checkpoint of %s: %w", merged, err)
	case c.entries > s.opt.MaxEntries || c.bytes > s.opt.MaxStoreBytes:
		c.discard()
		return s.checkpoint(ctx, merged, 0, false)
	case c.root == b.root:
		c.discard()
		return b, nil
	}
	info, err := c.commit(o.Lower)
	if err != nil {
		return Info{}, fmt.Errorf("checkpoint of %s: %w", merged, err)
	}
	return info, nil
}

// overlay is what an overlay's upper layer holds, beside a capture's stack of folders:
// the upper layer's folder at each (-1 where the capture reads all: the folder is not
// there, or is opaque or redirected).
type overlay struct {
	frames []int
	buf    []byte
}

// names returns the names the upper layer holds in the folder being captured (whiteouts
// of deleted names included); nil when every name there is to be read.
func (o *overlay) names() map[string]bool {
	if o == nil || o.frames[len(o.frames)-1] < 0 {
		return nil
	}
	names, err := readNames(o.frames[len(o.frames)-1], o.buf)
	if err != nil {
		return nil
	}
	in := make(map[string]bool, len(names))
	for _, n := range names {
		in[n] = true
	}
	return in
}

// overlayMarks are the extended attributes that make an upper folder's lower entries
// other than those at its path (opaque: none; redirect: another folder's), in both of
// the namespaces overlayfs may use: with either, the folder is read whole.
var overlayMarks = []string{"trusted.overlay.opaque", "trusted.overlay.redirect", "user.overlay.opaque", "user.overlay.redirect"}

// push enters the upper layer's folder name, as the capture enters the folder.
func (o *overlay) push(name string) {
	if o == nil {
		return
	}
	fd := -1
	if top := o.frames[len(o.frames)-1]; top >= 0 {
		fd, _ = unix.Openat(top, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	}
	for _, x := range overlayMarks {
		if fd < 0 {
			break
		}
		if _, err := unix.Fgetxattr(fd, x, nil); err != unix.ENODATA {
			unix.Close(fd)
			fd = -1
		}
	}
	o.frames = append(o.frames, max(fd, -1))
}

// pop leaves the folder push entered.
func (o *overlay) pop() {
	if o == nil {
		return
	}
	if fd := o.frames[len(o.frames)-1]; fd >= 0 {
		unix.Close(fd)
	}
	o.frames = o.frames[:len(o.frames)-1]
}

func (o *overlay) close() {
	for len(o.frames) > 0 {
		o.pop()
	}
}

// count adds the entry e, kept as the lower layer's, and all it holds to the capture's
// counts, as a walk would have found them.
func (c *capture) count(e *entry) error {
	c.entries++
	c.manyNames = c.manyNames || e.flags&flagLinked != 0
	if e.kind != kindDir {
		c.files++
		if e.kind == kindFile && e.captured() && e.target == "" {
			c.bytes += e.size
		}
		return nil
	}
	t, err := c.s.subtree(e)
	if err != nil {
		return err
	}
	for i := range t {
		if err := c.count(&t[i]); err != nil {
			return err
		}
	}
	return nil
}
