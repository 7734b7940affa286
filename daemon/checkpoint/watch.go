package checkpoint

import (
	"errors"
	"strconv"

	"golang.org/x/sys/unix"
)

// A watcher lets a checkpoint of a workspace where nothing happened skip the walk. Each
// capture puts an inotify watch on every folder it lists, before listing it, so any
// change to what it reads from then on queues an event: a write, a close after writing
// (a program writing through a shared memory map must have opened the file to write),
// a mode or time change, a name created, removed or moved. When the queue is empty at
// the next checkpoint, the workspace is as the latest checkpoint holds it, which is
// returned at once. Anything else — an event, a queue overflow, a folder that could not
// be watched (the watch limit), a file with names outside the folders watched (a hard
// link), a capture that saw a change while it ran — falls back to the full walk.
//
// Watches are on inodes, so a change made through another path to the same folder (a
// sandbox's bind mount of the workspace) queues its event too. For the same reason a
// folder above the workspace renamed and another workspace made at its path queues
// nothing: unchanged compares the device and inode the path names now with the root's.
//
// What inotify cannot see: a write through a shared map made after the file's last
// close and after the checkpoint that follows it (no program outlives its step's
// sandbox to make one), and a second name made for a file from outside the workspace,
// with writes through it (the link count's event goes to the file's own watches, not
// its folder's). Only a host-side process can do either; so a checkpoint of a step may
// miss them, but Restore and RestoreFrom never use the fast path: what they keep as
// already right and the stale check see the workspace as it is.
type watcher struct {
	fd int    // inotify instance, nonblocking; -1: none (the fallback is the walk)
	ws string // the workspace watched
	// armed: every folder of the checkpoint latest was watched before it was read and
	// nothing has happened since it was taken, as far as the queue has told.
	armed  bool
	latest ID
	root   devIno // the workspace folder the watches were put on
	failed bool   // this capture could not watch some folder
	buf    []byte
}

// watchMask is every event that can change what a checkpoint reads.
const watchMask = unix.IN_MODIFY | unix.IN_ATTRIB | unix.IN_CLOSE_WRITE | unix.IN_CREATE | unix.IN_DELETE |
	unix.IN_DELETE_SELF | unix.IN_MOVED_FROM | unix.IN_MOVED_TO | unix.IN_MOVE_SELF | unix.IN_ONLYDIR

func newWatcher() *watcher {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		fd = -1 // out of inotify instances: every checkpoint walks
	}
	return &watcher{fd: fd, buf: make([]byte, 64<<10)}
}

func (w *watcher) close() {
	if w != nil && w.fd >= 0 {
		unix.Close(w.fd)
		w.fd = -1
	}
}

// unchanged reports whether workspace ws is still as checkpoint latest holds it.
func (w *watcher) unchanged(ws string, latest ID) bool {
	if w == nil || w.fd < 0 || !w.armed || w.ws != ws || w.latest != latest {
		return false
	}
	var st unix.Stat_t
	if unix.Stat(ws, &st) != nil || (devIno{st.Dev, st.Ino}) != w.root {
		w.armed = false
		return false
	}
	if w.drain() {
		w.armed = false
		return false
	}
	return true
}

// drain empties the queue and reports whether anything was in it (or it failed).
func (w *watcher) drain() (any bool) {
	for {
		n, err := unix.Read(w.fd, w.buf)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.EAGAIN):
			return any
		case err != nil || n <= 0:
			return true
		}
		any = true
	}
}

// begin starts watching a capture of ws: what happened before it no longer matters,
// since the capture reads the workspace as it is now.
func (w *watcher) begin(ws string) {
	if w == nil || w.fd < 0 {
		return
	}
	w.drain()
	w.armed, w.failed, w.ws = false, false, ws
}

// top records the workspace folder a capture opened, before it is watched.
func (w *watcher) top(root devIno) {
	if w != nil {
		w.root = root
	}
}

// add watches the open folder fd before the capture lists it.
func (w *watcher) add(fd int) {
	if w == nil || w.fd < 0 || w.failed {
		return
	}
	if _, err := unix.InotifyAddWatch(w.fd, "/proc/self/fd/"+strconv.Itoa(fd), watchMask); err != nil {
		w.failed = true // ENOSPC: the watch limit; walk every time until it frees
	}
}

// end arms the watcher for checkpoint id, the capture's, when every folder was watched,
// no file has a name the watches may not see (several), and nothing happened meanwhile.
func (w *watcher) end(id ID, manyNames bool) {
	if w == nil || w.fd < 0 {
		return
	}
	w.armed = !w.failed && !manyNames && !w.drain()
	w.latest = id
}
