package effect

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/internal/display"
)

// boundEvery is how often a run ahead's file system is looked at (one statfs each): a
// writer at disk speed gets at most this long past the bound before it is stopped.
const boundEvery = 100 * time.Millisecond

// diskBound is the disk one agent's preview may take: its copy of the workspace and its
// store together, as commands.DiskUsage counts them, at most room.
type diskBound struct {
	view, store string
	room        int64
	over        string // why the run ahead was stopped, or ""
	grew        int64  // what the copy's file system grew by during the run, as statfs saw it
}

func (p *Previews) bound(agentID, view string, room int64) *diskBound {
	return &diskBound{view: view, store: filepath.Join(p.opt.Dir, agentID, "store"), room: room}
}

// measure is the disk the copy and the store take now.
func (b *diskBound) measure() (int64, error) {
	v, err := commands.DiskUsage(b.view)
	if err != nil {
		return 0, err
	}
	s, err := commands.DiskUsage(b.store)
	return v + s, err
}

// run runs fn, the run ahead, in the copy, which with the store takes took now: it is
// cut once the two take more than room (commands.WatchDisk). Its change is captured into
// the store after it, which adds about what it wrote: a run whose copy grew past half of
// what room leaves is over too, found by one more measure at its end. over says why.
func (b *diskBound) run(ctx context.Context, took int64, fn func(context.Context) (string, error)) (string, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	fs0, known := commands.FSUsed(b.view)
	stop := commands.WatchDisk(b.view, b.room, took, boundEvery, b.measure, func(n int64, err error) {
		b.over = b.overBy(n, took)
		if err != nil {
			b.over = b.unmeasured(err)
		}
		cancel()
	})
	out, err := fn(ctx)
	stop()
	if b.over != "" {
		return out, err
	}
	if fs1, ok := commands.FSUsed(b.view); known && ok && fs1-fs0 <= (b.room-took)/2 {
		b.grew = max(fs1-fs0, 0)
		return out, err // the file system grew less than that: no walk needed
	}
	n, merr := b.measure()
	switch {
	case merr != nil:
		b.over = b.unmeasured(merr)
	case n+(n-took) > b.room:
		b.over = b.overBy(n+(n-took), took)
	}
	b.grew = max(n-took, 0)
	return out, err
}

// storeRoom is what capturing the run's change may add to the store: what room leaves
// beside the copy as it is now. The capture counts a file at its full size, as the store
// keeps it, so sparse files the copy holds in a few blocks are bounded too.
func (b *diskBound) storeRoom(took int64) int64 { return b.room - took - b.grew }

// unmeasured is why a run ahead whose disk could not be measured (err) was stopped:
// what cannot be measured cannot be shown within room.
func (b *diskBound) unmeasured(err error) string {
	return fmt.Sprintf("its run ahead could not be shown within the %s of disk its budget leaves a preview (%v): it was stopped, and nothing it wrote is kept",
		display.Size(b.room), err)
}

func (b *diskBound) overBy(n, took int64) string {
	return fmt.Sprintf("its run ahead wrote past the %s of disk its budget leaves a preview (%s with its copy of the workspace and its change, %s before it ran): it was stopped, and nothing it wrote is kept",
		display.Size(b.room), display.Size(n), display.Size(took))
}
