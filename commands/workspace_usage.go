package commands

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/internal/display"

	"golang.org/x/sys/unix"
)

// MinEntryBytes is what one file or folder counts for in DiskUsage beside its blocks: its
// inode, as FSUsed counts each inode in use, so that a million empty files, which take
// inodes but no blocks, count too, and what a command frees or adds in small files moves
// its measure as much as the file system.
const MinEntryBytes = 4096

// maxUsageDepth bounds the folders DiskUsage descends, each holding a descriptor
// meanwhile; file commands reach no deeper (paths are at most 4096 bytes).
const maxUsageDepth = 2048

// DiskUsage is the disk workspace ws takes: the blocks of every file and folder in it,
// and MinEntryBytes for each, a file with several links once. It walks by
// descriptor from the workspace opened as OpenWorkspace does, never following a link.
// A walk that would come up short fails instead, naming the folder and the fix, so that
// what it cannot see is never taken for nothing: a folder it may not list or look into
// (a daemon that is not root walks as the uid its sandboxes write as, which may chmod
// its own folders 0300) and folders nested deeper than maxUsageDepth.
func DiskUsage(ws string) (int64, error) {
	return (&usage{seen: map[[2]uint64]bool{}}).walk(ws)
}

// walk adds what ws takes to u.
func (u *usage) walk(ws string) (int64, error) {
	root, err := OpenWorkspace(ws)
	if errors.Is(err, fs.ErrPermission) {
		return 0, u.unlisted(".", err)
	}
	if err != nil {
		return 0, err
	}
	defer root.Close()
	top, err := root.Open(".")
	if err != nil {
		return 0, u.unlisted(".", err)
	}
	defer top.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(top.Fd()), &st); err != nil {
		return 0, u.unlisted(".", err)
	}
	u.add(&st)
	u.folder(top, 0, ".")
	return u.bytes, u.err
}

// usage is one DiskUsage walk.
type usage struct {
	bytes int64
	seen  map[[2]uint64]bool // (device, inode) of files with more than one link
	err   error              // why the walk stopped short

	held bool // every file in seen is counted already (Programs.DiskUsage)
}

func (u *usage) add(st *unix.Stat_t) {
	if (st.Nlink > 1 || u.held) && st.Mode&unix.S_IFMT != unix.S_IFDIR {
		key := [2]uint64{st.Dev, st.Ino}
		if u.seen[key] {
			return
		}
		u.seen[key] = true
	}
	u.bytes += st.Blocks*512 + MinEntryBytes
}

// unlisted is the error of a walk that could not list or look into the folder at rel.
func (u *usage) unlisted(rel string, err error) error {
	if u.err == nil {
		u.err = fmt.Errorf("disk usage: cannot read the folder %q in the workspace (%w), so what it holds cannot be counted: "+
			"make it readable again (chmod -R u+rwx %s) or remove it", display.Cut(rel, 200, display.Ellipsis), err, topOf(rel))
	}
	return u.err
}

// topOf is the workspace's entry that holds rel, as a shell word.
func topOf(rel string) string {
	top, _, _ := strings.Cut(rel, "/")
	return api.QuoteWord(top)
}

// folder adds what dir, at rel in the workspace, holds, descending into its folders;
// it stops at the first thing it cannot count (u.err).
func (u *usage) folder(dir *os.File, depth int, rel string) {
	fd := int(dir.Fd())
	for u.err == nil {
		entries, err := dir.ReadDir(256)
		for _, e := range entries {
			var st unix.Stat_t
			if err := unix.Fstatat(fd, e.Name(), &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
				if err != unix.ENOENT { // one removed meanwhile takes nothing
					u.unlisted(rel, err)
					return
				}
				continue
			}
			u.add(&st)
			if st.Mode&unix.S_IFMT != unix.S_IFDIR {
				continue
			}
			sub := path.Join(rel, e.Name())
			if depth+1 >= maxUsageDepth {
				u.err = fmt.Errorf("disk usage: the workspace has folders nested deeper than %d, too deep to count what they hold: remove them (rm -rf %s)",
					maxUsageDepth, topOf(sub))
				return
			}
			h, err := unix.Openat(fd, e.Name(), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err != nil {
				if err != unix.ENOENT {
					u.unlisted(sub, err)
					return
				}
				continue
			}
			f := os.NewFile(uintptr(h), e.Name())
			u.folder(f, depth+1, sub)
			f.Close()
			if u.err != nil {
				return
			}
		}
		if err == io.EOF || err == nil && len(entries) == 0 {
			return
		}
		if errors.Is(err, unix.ENOENT) {
			return // removed while it was walked (rm -rf): it holds nothing more
		}
		if err != nil {
			u.unlisted(rel, err)
		}
	}
}

// FSUsed is what the file system holding dir has in use, in bytes, each inode in use
// counting MinEntryBytes as DiskUsage counts it: one statfs(2), so it can be looked at
// often; it bounds from above what a writer in dir added since the last look.
func FSUsed(dir string) (int64, bool) {
	used, _, ok := fsLook(dir)
	return used, ok
}

// fsLook is FSUsed, and the bytes free there for an unprivileged writer.
func fsLook(dir string) (used, free int64, ok bool) {
	var st unix.Statfs_t
	if unix.Statfs(dir, &st) != nil {
		return 0, 0, false
	}
	blocks := int64(st.Blocks-st.Bfree) * int64(st.Bsize)
	return blocks + int64(st.Files-st.Ffree)*MinEntryBytes, int64(st.Bavail) * int64(st.Bsize), true
}

// DiskFloor is the free disk a running command's file system keeps: a command that
// takes it lower is cut, whatever its measure says. It bounds what no measure can show —
// a file deleted while its only descriptor waits in a socket's queue, which no /proc
// listing names — so no run can fill the disk the daemon records its steps on.
var DiskFloor int64 = 256 << 20

// WatchDisk bounds what a running command writes in dir: every interval it looks at
// dir's file system (FSUsed, one call); once that grew by more than what the limit leaves
// over the last measurement, or could not be looked at, it measures (measure: a walk,
// DiskUsage or more), and calls cut once, then stops watching, when the measurement is
// over limit or failed (err): what cannot be measured cannot be shown within the limit.
// Growth that neither this measure nor any other running watch's explains (the ledger)
// is charged too, from its lowest since the start, so what others freed meanwhile is no
// room: past limit, when the command's programs park descriptors where no listing shows
// them (parks, Programs.Parks), cut gets ErrUnexplainedGrowth, as the growth may be the
// command's where no measure looks; a command that parks none is never cut for it.
// Every tenth look measures whatever the file system says, since what others free there
// hides growth. stop ends the watch; it returns once the watch did, so cut is never
// called after it. A file system whose free disk fell under floor (DiskFloor, or 0 where
// a kernel quota bounds the writes) cuts at the look that sees it (err says so). A limit
// of 0 or less only measures, so what the command writes is explained to the others on
// its file system, and never cuts for its size.
func WatchDisk(dir string, limit, floor int64, interval time.Duration, measure func() (int64, error), parks func() bool, cut func(n int64, err error)) (stop func()) {
	base, known := FSUsed(dir)
	w := ledger.join(dir, measure)
	measured := int64(0)
	if limit > 0 {
		// Its start is a real measure: a size kept from before, or an estimate, would be
		// taken for growth (or a fall) of the command's. One that fails fails again at the
		// first look, and cuts.
		measured, _ = ledger.take(w)
	}
	start, explained, counted := base, ledger.explained(w), known && w.ok
	low := int64(0) // the least growth no measure explained since the start
	done, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		t := time.NewTicker(interval)
		defer t.Stop()
		for look := 1; ; look++ {
			select {
			case <-done:
				return
			case <-t.C:
			}
			// statfs sees the whole file system, where what others free at the same time
			// hides what this writer adds: every tenth look measures whatever it says.
			used, free, ok := fsLook(dir)
			if ok && free < floor {
				cut(0, fmt.Errorf("the file system holding %s has %s free, under the %s agentd keeps free while commands run "+
					"(a command may hold disk no measure shows, such as a file it deleted but keeps): free disk there, then resume the agent",
					dir, display.Size(free), display.Size(floor)))
				return
			}
			charged := limit > 0 && ok && counted
			fell := charged && unexplained(w, used, start, explained) < low
			if !fell && look%10 != 0 && ok && known && (limit <= 0 || used-base <= limit-measured) {
				continue
			}
			n, err := ledger.take(w)
			if limit <= 0 {
				continue // others refresh it before they charge anyone
			}
			if err != nil || n > limit {
				cut(n, err)
				return
			}
			if fell {
				// statfs sees a deletion before the measure that explains it: every watch
				// measures first, so that no one's deletion lowers the mark by what it freed.
				ledger.refresh(w)
				if again, ok := FSUsed(dir); ok {
					used = again
				}
				low = min(low, unexplained(w, used, start, explained))
			}
			if grew := unexplained(w, used, start, explained) - low; charged && grew > limit && parks() {
				ledger.refresh(w) // after statfs: what others write meanwhile only lowers it
				if grew = unexplained(w, used, start, explained) - low; grew > limit {
					cut(n, &ErrUnexplainedGrowth{Dir: dir, Grew: grew, Limit: limit})
					return
				}
			}
			base, known, measured = used, ok, n // others wrote there: look again after as much growth
		}
	}()
	return func() {
		close(done)
		<-exited
		ledger.leave(w)
	}
}

// unexplained is what w's file system grew by from start to used that the ledger's
// measures, w's own among them, do not explain (a fall when negative): explained was
// the ledger's at start.
func unexplained(w *diskWatch, used, start, explained int64) int64 {
	return used - start - (ledger.explained(w) - explained)
}
