package effect

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/daemon/checkpoint"
	"github.com/agentd/agentd/internal/display"
)

// boundEvery is how often a run ahead's file system is looked at (one statfs each): a
// writer at disk speed gets at most this long past the bound before it is stopped.
const boundEvery = 100 * time.Millisecond

// diskBound is the disk one agent's preview may take: its copy of the workspace and its
// store together, as commands.DiskUsage counts them, at most room.
type diskBound struct {
	view, store string
	quotaDir    string // where its quota's tmpfs is mounted, out of the sandbox's sight
	room        int64
	over        string // why the run ahead was stopped, or ""
	grew        int64  // what the copy's file system grew by during the run, as statfs saw it
	q           *quota // the kernel's bound on the run's writes, when the daemon may mount one
	noQuota     string // why there is none, and the run ahead is on a copy
	// memory is the box's memory limit, which bounds a quota no memory cgroup charges to
	// the box (a daemon that is not root mounts it in a namespace of its own): its tmpfs
	// is memory, however much disk the budget leaves. memoryBound says it is the bound.
	memory      int64
	memoryBound bool
}

// bound is the bound of agentID's next preview, in the copy at view. It first drops a
// quota a daemon that died during a run ahead left mounted there, before the copy is
// written: writes would land in its upper layer.
func (p *Previews) bound(agentID, view string, room, memory int64) (*diskBound, error) {
	b := &diskBound{view: view, store: filepath.Join(p.opt.Dir, agentID, "store"), quotaDir: filepath.Join(p.opt.Dir, agentID, "quota"), room: room, memory: memory}
	if err := (&quota{view: view, dir: b.quotaDir}).unmount(); err != nil {
		return nil, fmt.Errorf("the last preview's quota could not be unmounted: %w", err)
	}
	return b, nil
}

// place makes where the run ahead sees workspace ws as checkpoint from holds it: under
// a quota, an overlay on ws itself; else the copy, restored to from. It returns what the
// copy and the store s take, counted from what the checkpoints know (a walk would cost
// as much as the preview): each file a block at least, and the objects; under a quota
// no copy is made, but it is counted all the same.
func (b *diskBound) place(ctx context.Context, s *checkpoint.Store, from checkpoint.Info, ws string) (int64, error) {
	// A restore keeps the folder's own mode, which the last command may have taken away.
	if err := errors.Join(os.MkdirAll(b.view, 0o700), os.Chmod(b.view, 0o700)); err != nil {
		return 0, fmt.Errorf("no folder for the copy: %w", err)
	}
	took := from.Bytes + int64(from.Files+1)*commands.MinEntryBytes + s.Size()
	if took <= b.room {
		b.noQuota = b.mountQuota(ws, b.room-took)
	}
	if b.q == nil && took <= b.room {
		if _, err := s.Restore(ctx, b.view, from.ID); err != nil {
			return 0, fmt.Errorf("the copy could not be made: %w", err)
		}
		took = from.Bytes + int64(from.Files+1)*commands.MinEntryBytes + s.Size()
	}
	if took > b.room {
		return 0, errors.Join(fmt.Errorf("its copy of the workspace and its checkpoints take %s, over the %s of disk its budget leaves a preview", display.Size(took), display.Size(b.room)),
			b.putBack())
	}
	return took, nil
}

// measure is the disk the copy (with what run's programs hold there) and the store take
// now; over the room once the quota is full.
func (b *diskBound) measure(run *commands.Programs) (int64, error) {
	if b.q.full() {
		return b.room + 1, nil
	}
	v, err := run.DiskUsage(b.view)
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
	run := &commands.Programs{}
	ctx = commands.WithPrograms(ctx, run)
	floor := commands.DiskFloor
	if b.q != nil {
		floor = 0 // the quota bounds the writes, and statfs sees its tmpfs, not the disk
	}
	stop := commands.WatchDisk(b.view, b.room, floor, boundEvery, func() (int64, error) { return b.measure(run) }, run.Parks, func(n int64, err error) {
		b.over = b.overBy(n, took)
		if err != nil {
			b.over = b.unmeasured(err)
		}
		cancel()
	})
	out, err := fn(ctx)
	stop()
	if b.over == "" && b.q.full() { // stopped by the kernel (ENOSPC) before the watch looked
		b.over = b.overBy(b.room+1, took)
	}
	if b.over != "" {
		return out, err
	}
	if fs1, ok := commands.FSUsed(b.view); known && ok && fs1-fs0 <= (b.room-took)/2 {
		b.grew = max(fs1-fs0, 0)
		return out, err // the file system grew less than that: no walk needed
	}
	n, merr := b.measure(nil) // its programs are gone, and what they held is freed
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
	if b.memoryBound && b.q.full() {
		return fmt.Sprintf("its run ahead wrote past the %s of memory its box may take (agentd is not root, so what it writes ahead is kept in memory, bounded by the sandbox's memory limit, [shell] memory): it was stopped, and nothing it wrote is kept",
			display.Size(b.memory))
	}
	return fmt.Sprintf("its run ahead wrote past the %s of disk its budget leaves a preview (%s with its copy of the workspace and its change, %s before it ran): it was stopped, and nothing it wrote is kept",
		display.Size(b.room), display.Size(n), display.Size(took))
}

// putBack drops what a run ahead that leaves nothing to apply wrote in the copy, so it does
// not sit on the disk until the next preview: under a quota the copy was never written
// (unmounting drops the upper layer), else the copy is removed and the next preview makes
// it afresh. It is not restored: a restore would first capture what the run wrote into
// the store, past the bound the run was held to (sparse files take no blocks in the copy
// but their whole size in the store). The error says only what could not be cleaned up.
func (b *diskBound) putBack() error {
	if b.q != nil {
		if err := b.q.unmount(); err != nil {
			return fmt.Errorf("(what it wrote could not be dropped: %w)", err)
		}
		return nil
	}
	took, err := commands.DiskUsage(b.view) // what removing it frees, for the ledger
	if err := checkpoint.RemoveTree(filepath.Dir(b.view), filepath.Base(b.view)); err != nil {
		return fmt.Errorf("(what it wrote in the copy could not be removed: %w)", err)
	}
	if err == nil {
		commands.ExplainGrowthIn(filepath.Dir(b.view), -took)
	}
	return nil
}

// quota bounds what a run ahead writes with the kernel: the workspace becomes the lower
// layer of an overlay mounted on the copy's folder, whose upper layer, where every write
// and every copy-up of a changed file goes, is a tmpfs of the room the run has left
// (size, and an inode per MinEntryBytes, as DiskUsage counts). A write past it fails
// (ENOSPC) however fast it comes; the watch stays as a second wall and the run is called
// over once the tmpfs is full. The lower layer is never written, so unmounting drops
// what the run wrote. The tmpfs is memory while the run lasts, at most the room.
//
// As root both are mounted in the daemon's own mount namespace. A daemon that is not
// root mounts them in a user and mount namespace of its own, which a holder process
// (holdOverlay) keeps while the preview lasts: the daemon reaches them at
// /proc/<holder>/root, the sandbox runs the command in that namespace (ViewNamespace),
// and no other process sees them. The holder's end drops them, even when the daemon dies.
type quota struct {
	view, dir string    // the copy (the overlay's mount point); the tmpfs
	at        string    // "/proc/<holder>/root" in a namespace of its own, else ""
	holder    *exec.Cmd // that namespace's holder
}

// mountQuota mounts b's quota of size bytes over lower, the folder whose content the
// run sees: the workspace itself, as no write reaches a lower layer (a change made to
// it meanwhile, by a helper, makes the preview stale, as any change since). It leaves b
// without one, and says why, when it may not mount (mayMount), the workspace is not the
// folder the one resolver opens, the quota's own paths cannot be said in overlay's
// options (the workspace is named by its descriptor there), or the kernel refuses.
func (b *diskBound) mountQuota(lower string, size int64) (why string) {
	dir := b.quotaDir
	if !mayMount {
		return "previews may not mount here"
	}
	if strings.ContainsAny(b.view+dir, ",:\\") {
		return "the preview's folders have a name overlay's options cannot say"
	}
	size = max(size, commands.MinEntryBytes)
	// The lower layer is the folder the one resolver opened, named by its descriptor: a
	// link swapped onto the workspace's path cannot feed the preview another tree.
	ld, err := commands.OpenWorkspaceDir(lower)
	if err != nil {
		return err.Error()
	}
	defer ld.Close()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err.Error()
	}
	q := &quota{view: b.view, dir: dir}
	if os.Geteuid() == 0 {
		err = mountLayers(int(ld.Fd()), b.view, dir, size, "")
		if err == nil {
			err = errors.Join(os.Mkdir(q.merged(), 0o700), unix.Mount(b.view, q.merged(), "", unix.MS_BIND, ""))
		}
	} else {
		if b.memory > 0 && size > b.memory { // root's box is charged what its programs write there; this one is not
			size, b.memoryBound = b.memory, true
		}
		q.holder, err = holdInNamespace(ld, lower, b.view, dir, size)
		if err == nil {
			q.at = "/proc/" + strconv.Itoa(q.holder.Process.Pid) + "/root"
		}
	}
	if err != nil {
		q.unmount()
		return err.Error()
	}
	b.q, b.view = q, q.at+b.view
	return ""
}

// mountLayers mounts a tmpfs of size bytes on dir and, on view, the overlay whose lower
// layer is the folder open at descriptor lower and whose upper layer is in that tmpfs.
// opts are more of overlay's options.
func mountLayers(lower int, view, dir string, size int64, opts string) error {
	var root unix.Stat_t
	if err := unix.Fstat(lower, &root); err != nil {
		return err
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, fmt.Sprintf("size=%d,nr_inodes=%d,mode=0700", size, size/commands.MinEntryBytes+2)); err != nil {
		return fmt.Errorf("its tmpfs: %w", err)
	}
	upper, work := filepath.Join(dir, "upper"), filepath.Join(dir, "work")
	// The overlay's root is its upper layer's: the workspace's root as it is.
	if err := errors.Join(os.Mkdir(upper, 0o700), os.Mkdir(work, 0o700), os.Lchown(upper, int(root.Uid), int(root.Gid)),
		os.Chmod(upper, os.FileMode(root.Mode&0o7777)), unix.UtimesNano(upper, []unix.Timespec{root.Atim, root.Mtim})); err != nil {
		return err
	}
	lowerdir := "/proc/self/fd/" + strconv.Itoa(lower)
	if err := unix.Mount("overlay", view, "overlay", unix.MS_NOSUID|unix.MS_NODEV, "lowerdir="+lowerdir+",upperdir="+upper+",workdir="+work+opts); err != nil {
		return fmt.Errorf("its overlay: %w", err)
	}
	return nil
}

// mayMount says whether a preview may mount its quota: as root in the daemon's own mount
// namespace, else in a namespace of its own. A benchmark turns it off to measure the
// copy a daemon that may not mount makes instead.
var mayMount = true

// merged is where the daemon captures the run's change: the overlay mounted again. The
// store keeps its stat data by path, and the overlay's files have another device than
// the copy's: captured at the copy's own path, the next restore there would read every
// file again. In a namespace of its own, the path the daemon reaches it at is another
// already.
func (q *quota) merged() string {
	if q.at != "" {
		return q.at + q.view
	}
	return filepath.Join(q.dir, "merged")
}

// capture checkpoints the copy after the run into s, adding at most maxNew: under a
// quota through the overlay's other mount, reading only what its upper layer holds (the
// paths the run wrote) and taking the rest as checkpoint from, which its lower layer,
// the copy, holds; else the whole copy.
func (b *diskBound) capture(ctx context.Context, s *checkpoint.Store, from checkpoint.ID, maxNew int64) (checkpoint.Info, error) {
	if b.q != nil {
		return s.CheckpointWithin(ctx, b.q.merged(), maxNew, &checkpoint.Overlay{Upper: b.q.at + filepath.Join(b.q.dir, "upper"), Lower: from})
	}
	return s.CheckpointWithin(ctx, b.view, maxNew, nil)
}

// full reports whether q's tmpfs has no room left: the kernel refused a write.
func (q *quota) full() bool {
	var st unix.Statfs_t
	return q != nil && unix.Statfs(q.at+q.dir, &st) == nil && (st.Bavail == 0 || st.Ffree == 0)
}

// unmount drops q's overlay and tmpfs, and with them what the run wrote; again is a no-op.
func (q *quota) unmount() error {
	switch {
	case q == nil:
		return nil
	case q.holder != nil:
		q.holder.Process.Kill() // its namespace, and all mounted there, ends with it
		q.holder.Wait()
		q.holder = nil
		return nil
	case q.at != "":
		return nil
	}
	return errors.Join(unmountStale(q.merged()), unmountStale(q.view), unmountStale(q.dir))
}

// unmountStale unmounts what is mounted at dir, as a quota left by a daemon that died
// during a run ahead: writes there would land in its upper layer, not the copy. A link
// there is never followed.
func unmountStale(dir string) error {
	for {
		switch err := unix.Unmount(dir, unix.MNT_DETACH|unix.UMOUNT_NOFOLLOW); {
		case errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EPERM):
			return nil // nothing (more) mounted there, or none this daemon may have made
		case err != nil:
			return err
		}
	}
}
