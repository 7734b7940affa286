package checkpoint

import (
	"github.com/agentd/agentd/commands"

	"time"

	"golang.org/x/sys/unix"
)

// commit makes the capture a checkpoint: its objects, then its record; retention,
// which keeps pin whatever it drops, may start after.
func (c *capture) commit(pin ID) (Info, error) {
	s := c.s
	if err := c.flush(); err != nil {
		return Info{}, err
	}
	info := Info{ID: 1, Time: time.Now(), Files: c.files, Bytes: c.bytes, NewBytes: c.newBytes,
		Partial: c.partial, Notices: c.notes.list, MoreNotices: c.notes.more, root: c.root, links: c.linked}
	if n := len(s.ids); n > 0 {
		info.ID = s.ids[n-1] + 1
	}
	if err := s.writeRecord(info); err != nil {
		return Info{}, err
	}
	if len(s.ids) > s.opt.KeepCount || s.bytes > max(s.opt.MaxStoreBytes, s.kept+s.opt.MaxStoreBytes/10) {
		// Retention reads every kept checkpoint's listings: it runs while the step does,
		// and the next call waits for it.
		held := s.held
		s.collecting.Go(func() { s.collectErr = s.collect(pin, held) })
	}
	return info, nil
}

// flush makes the pending objects durable objects: one syncfs for all their contents,
// then the renames and one fsync of the objects folder. An object is never in place
// before its content is on disk, so an object found in the store is whole.
func (c *capture) flush() error {
	if len(c.pending) == 0 {
		return nil
	}
	s := c.s
	if err := s.syncfs(s.tm); err != nil {
		c.discard()
		return err
	}
	step()
	for i, p := range c.pending {
		if err := unix.Renameat(s.tm, p.tmp, s.objects, p.h.String()); err != nil {
			c.pending = c.pending[i:]
			c.discard()
			return err
		}
		s.bytes += p.size
		step()
	}
	c.pending = nil
	return s.fsync(s.objects)
}

// discard removes the pending objects' temporary files.
func (c *capture) discard() {
	for _, p := range c.pending {
		unlinkFreed(c.s.tm, p.tmp) // keep explained it
	}
	c.pending = nil
}

// unlinkFreed removes name in dir, a file whose blocks the daemon explained when it
// wrote them (commands.ExplainGrowth), and explains what that frees with its sign, so
// the room is no credit for a command that holds bytes no listing shows.
func unlinkFreed(dir int, name string) error {
	var st unix.Stat_t
	looked := unix.Fstatat(dir, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil
	err := unix.Unlinkat(dir, name, 0)
	if err == nil && looked && st.Nlink == 1 {
		commands.ExplainGrowth(st.Dev, -st.Blocks*512)
	}
	return err
}
