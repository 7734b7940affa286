package commands

import (
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// MinEntryBytes is the least one file or folder counts for in DiskUsage: a block, so that
// a million empty files, which take inodes but no blocks, count too.
const MinEntryBytes = 4096

// maxUsageDepth bounds the folders DiskUsage descends, each holding a descriptor
// meanwhile; file commands reach no deeper (paths are at most 4096 bytes).
const maxUsageDepth = 2048

// DiskUsage is the disk workspace ws takes: the blocks of every file and folder in it,
// each counting at least MinEntryBytes, a file with several links once. It walks by
// descriptor from the workspace opened as OpenWorkspace does, never following a link;
// what cannot be read counts as one entry.
func DiskUsage(ws string) (int64, error) {
	root, err := OpenWorkspace(ws)
	if err != nil {
		return 0, err
	}
	defer root.Close()
	top, err := root.Open(".")
	if err != nil {
		return 0, err
	}
	defer top.Close()
	u := &usage{seen: map[[2]uint64]bool{}}
	var st unix.Stat_t
	if err := unix.Fstat(int(top.Fd()), &st); err != nil {
		return 0, err
	}
	u.add(&st)
	u.folder(top, 0)
	return u.bytes, nil
}

// usage is one DiskUsage walk.
type usage struct {
	bytes int64
	seen  map[[2]uint64]bool // (device, inode) of files with more than one link
}

func (u *usage) add(st *unix.Stat_t) {
	if st.Nlink > 1 && st.Mode&unix.S_IFMT != unix.S_IFDIR {
		key := [2]uint64{st.Dev, st.Ino}
		if u.seen[key] {
			return
		}
		u.seen[key] = true
	}
	u.bytes += max(st.Blocks*512, MinEntryBytes)
}

// folder adds what dir holds, descending into its folders.
func (u *usage) folder(dir *os.File, depth int) {
	fd := int(dir.Fd())
	for {
		entries, err := dir.ReadDir(256)
		for _, e := range entries {
			var st unix.Stat_t
			if unix.Fstatat(fd, e.Name(), &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
				u.bytes += MinEntryBytes
				continue
			}
			u.add(&st)
			if st.Mode&unix.S_IFMT != unix.S_IFDIR || depth+1 >= maxUsageDepth {
				continue
			}
			sub, err := unix.Openat(fd, e.Name(), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err != nil {
				continue
			}
			f := os.NewFile(uintptr(sub), e.Name())
			u.folder(f, depth+1)
			f.Close()
		}
		if err != nil || len(entries) == 0 {
			return
		}
	}
}

// FSUsed is what the file system holding dir has in use, in bytes, each inode in use
// counting MinEntryBytes as DiskUsage counts it: one statfs(2), so it can be looked at
// often; it bounds from above what a writer in dir added since the last look.
func FSUsed(dir string) (int64, bool) {
	var st unix.Statfs_t
	if unix.Statfs(dir, &st) != nil {
		return 0, false
	}
	blocks := int64(st.Blocks-st.Bfree) * int64(st.Bsize)
	return blocks + int64(st.Files-st.Ffree)*MinEntryBytes, true
}

// WatchDisk bounds what a running command writes in dir: every interval it looks at
// dir's file system (FSUsed, one call); once that grew by more than limit-measured since
// the last measurement, it measures (measure: a walk, DiskUsage or more), and calls cut
// with the measurement when that is over limit, once, then stops watching. Growth that
// was someone else's raises the baseline instead; every tenth look measures whatever
// the file system says, since what others free there hides growth. stop ends the
// watch; it returns once the watch did, so cut is never called after it.
func WatchDisk(dir string, limit, measured int64, interval time.Duration, measure func() (int64, error), cut func(n int64)) (stop func()) {
	base, known := FSUsed(dir)
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
			used, ok := FSUsed(dir)
			if look%10 != 0 && (!ok || !known || used-base <= limit-measured) {
				continue
			}
			n, err := measure()
			if err != nil {
				continue
			}
			if n > limit {
				cut(n)
				return
			}
			base, measured = used, n // others wrote there: look again after as much growth
		}
	}()
	return func() {
		close(done)
		<-exited
	}
}
