package commands

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"

	"github.com/agentd/agentd/internal/display"

	"golang.org/x/sys/unix"
)

// Bytes a command holds where no listing names them (a file it deleted whose only
// descriptor waits in a unix socket's queue) are bounded by accounting, not by finding
// one more holder: statfs says what a file system grew by, and every running watch on
// it says what its measure found its own command grew by. Growth nothing explains is
// charged to a running command there whose programs, at that look, hold a place where
// descriptors wait unseen (Programs.Parks: a unix socket with descriptors queued, its
// own or its waiting connections'), counted from its lowest since the command started, so what others
// freed meanwhile (what an ended command hid, small files whose inodes statfs counts)
// is no room; past its limit the command is cut (ErrUnexplainedGrowth). A command that
// parks nothing is never cut for growth it did not make, however busy the host. Two
// commands on one file system are not cut for each other's writes either: a watch that
// finds growth it cannot explain has every other watch there measure first (refresh).
//
// What is left: a command that parks is cut when others' writes that no watch measures
// (another program on the host, the daemon's writes it does not explain) grow the file
// system by more than its whole limit while it runs; what others free and what it parks
// between two of its looks net out, so that much is room once; a descriptor sent to
// another command's programs over a socket both reach is charged to that one; and a look
// lists the run's programs, then reads each, so a holder that forks and exits between
// the two (a relay of short-lived processes passing the socket on) is not seen by it — a
// look of a frozen run (the cgroup freezer, root) would close that. A kernel
// bound per run (a sized tmpfs) would hold without these, but an agent's step writes its
// real workspace, where no unprivileged daemon can set one; the run ahead of a root
// daemon has one (its quota), and this ledger is the wall for the rest.

// ledger is the daemon's one ledger of what running commands' measures explain.
var ledger = growthLedger{devices: map[uint64]*deviceLedger{}}

// growthLedger is, per file system (device), what every watch's measures found their
// commands grew by since the daemon started, and the watches running there.
type growthLedger struct {
	mu      sync.Mutex
	devices map[uint64]*deviceLedger
}

type deviceLedger struct {
	explained int64 // measured growth on the device, less what measures found freed
	watches   map[*diskWatch]bool
}

// diskWatch is one WatchDisk's measure, which other watches on its file system call to
// have its growth explained before they charge any.
type diskWatch struct {
	dir     string // the folder its measure walks
	dev     uint64
	ok      bool // dev is known: the watch is in the ledger
	mu      sync.Mutex
	measure func() (int64, error)
	last    int64 // what its last measure found; what the command had at the start first, or -1: not known yet
	gone    bool  // the watch ended: its measure may not be called any more
}

// join enters a watch of dir in the ledger, not knowing yet what its command had: its
// first measure says, and explains nothing. A watch that only measures (an agent with no
// disk budget) is measured once another watch shares its file system, before that one
// counts anything, so what its command had before is never taken for its growth.
func (l *growthLedger) join(dir string, measure func() (int64, error)) *diskWatch {
	w := &diskWatch{dir: filepath.Clean(dir), measure: measure, last: -1}
	var st unix.Stat_t
	if unix.Stat(dir, &st) != nil {
		return w // no baseline: its growth cannot be told from others' (WatchDisk measures every look)
	}
	w.dev, w.ok = st.Dev, true
	l.mu.Lock()
	defer l.mu.Unlock()
	d := l.devices[w.dev]
	if d == nil {
		d = &deviceLedger{watches: map[*diskWatch]bool{}}
		l.devices[w.dev] = d
	}
	d.watches[w] = true
	var unknown []*diskWatch
	for o := range d.watches {
		if len(d.watches) > 1 && o.last < 0 {
			unknown = append(unknown, o)
		}
	}
	l.mu.Unlock()
	for _, o := range unknown {
		l.take(o)
	}
	l.mu.Lock()
	return w
}

// explained is what measures explained on w's file system so far.
func (l *growthLedger) explained(w *diskWatch) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if d := l.devices[w.dev]; d != nil {
		return d.explained
	}
	return 0
}

// take measures w's command and enters what it grew by since the last measure.
func (l *growthLedger) take(w *diskWatch) (int64, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.gone {
		return w.last, nil
	}
	n, err := w.measure()
	if err != nil || !w.ok {
		return n, err
	}
	if w.last < 0 { // its baseline: what it had before is no growth
		w.last = n
		return n, nil
	}
	l.mu.Lock()
	l.devices[w.dev].explained += n - w.last
	l.mu.Unlock()
	w.last = n
	return n, nil
}

// refresh has every other watch on w's file system measure now, so what their
// commands wrote since their last look is explained before w charges anyone.
func (l *growthLedger) refresh(w *diskWatch) {
	l.mu.Lock()
	var others []*diskWatch
	for o := range l.devices[w.dev].watches {
		if o != w {
			others = append(others, o)
		}
	}
	l.mu.Unlock()
	for _, o := range others {
		l.take(o) // one that fails is cut by its own watch; what it grew stays unexplained
	}
}

// leave takes w out of the ledger once a measure it runs for another watch is done,
// after one last measure: its command's programs are gone, so what they wrote since
// the last look is explained, and what they held that the kernel freed with them (a
// deleted file) leaves the ledger instead of staying room another command could use.
func (l *growthLedger) leave(w *diskWatch) {
	if l.others(w) {
		l.take(w) // a measure that fails leaves its growth unexplained: no one is credited
	}
	w.mu.Lock()
	w.gone = true
	w.mu.Unlock()
	if !w.ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	d := l.devices[w.dev]
	delete(d.watches, w)
	if len(d.watches) == 0 {
		delete(l.devices, w.dev) // a new watch starts its count afresh
	}
}

// others says whether another watch runs on w's file system; with none, the device's
// count ends with w, and a last measure would explain nothing to anyone.
func (l *growthLedger) others(w *diskWatch) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	d := l.devices[w.dev]
	return w.ok && d != nil && len(d.watches) > 1
}

// ExplainGrowth says the daemon itself took n bytes on file system dev (a checkpoint's
// objects, a restore, a preview's copy), so no command running there is charged with
// them; a negative n is what it freed (retention's unlinks, a copy's teardown), which
// is then no room for a command to hold bytes no listing shows.
func ExplainGrowth(dev uint64, n int64) {
	ledger.mu.Lock()
	defer ledger.mu.Unlock()
	if d := ledger.devices[dev]; d != nil {
		d.explained += n
	}
}

// ExplainGrowthIn is ExplainGrowth on the file system holding path, unless a running
// watch measures a folder holding path (an applied preview, restored in a workspace
// whose command is watched): that measure explains what the write changed, so that it
// is explained once. A path that cannot be looked at explains nothing.
func ExplainGrowthIn(path string, n int64) {
	var st unix.Stat_t
	if unix.Stat(path, &st) != nil {
		return
	}
	path = filepath.Clean(path)
	ledger.mu.Lock()
	defer ledger.mu.Unlock()
	d := ledger.devices[st.Dev]
	if d == nil {
		return
	}
	for w := range d.watches {
		if path == w.dir || strings.HasPrefix(path, w.dir+"/") {
			return
		}
	}
	d.explained += n
}

// ErrUnexplainedGrowth is why a watch cut a command whose file system grew, while it ran,
// by more than its limit that no running command's measure explains.
type ErrUnexplainedGrowth struct {
	Dir         string // the folder watched
	Grew, Limit int64
}

func (e *ErrUnexplainedGrowth) Error() string {
	return fmt.Sprintf("the file system holding %s grew by %s while it ran that no measure explains, past its limit of %s: "+
		"a program it ran may keep a file it deleted where no listing shows it (its descriptor sent over a socket), "+
		"or another program on this host wrote there", e.Dir, display.Size(e.Grew), display.Size(e.Limit))
}
