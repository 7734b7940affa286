package commands

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// Programs are the programs one command runs, as a disk watch counts them: a file they
// hold open or mapped takes disk on the workspace's file system after no name leads to it
// (`exec 3>h; rm h; cat /dev/urandom >&3`), where no walk finds it, so a measure of the
// run (Programs.DiskUsage) counts it. The shell commands add each sandbox they start
// (Started) to the Programs the command's context carries (WithPrograms); nil is a run
// of no programs.
//
// The run's programs are exactly those in its sandbox's pid namespace (bwrap
// --unshare-pid): none can leave it, since entering or making another pid namespace takes
// a capability the sandbox drops (and its seccomp filter refuses new user namespaces,
// where one could be had). When the run ends its namespace dies with every program in
// it, and what they held is freed. A program run unsandboxed (sandbox "none") is in the
// daemon's own namespace and counts for nothing here: that mode does not contain.
type Programs struct {
	mu      sync.Mutex
	leaders map[int]bool // the started programs' pids, not reaped yet
}

type programsKey struct{}

// WithPrograms returns ctx carrying r: the sandboxes a command starts under it join r.
func WithPrograms(ctx context.Context, r *Programs) context.Context {
	return context.WithValue(ctx, programsKey{}, r)
}

// ProgramsOf is the Programs ctx carries, or nil.
func ProgramsOf(ctx context.Context) *Programs {
	r, _ := ctx.Value(programsKey{}).(*Programs)
	return r
}

// Started adds the program pid (a sandbox's bwrap, or a program in a pid namespace of
// its own) to r until end is called, which the caller does before it reaps pid, so the
// number never names a stranger.
func (r *Programs) Started(pid int) (end func()) {
	if r == nil {
		return func() {}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.leaders == nil {
		r.leaders = map[int]bool{}
	}
	r.leaders[pid] = true
	return func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		delete(r.leaders, pid)
	}
}

// DiskUsage is DiskUsage(ws) and, once each, the files on ws's file system r's programs
// hold (through a descriptor or a mapping) that no name in ws leads to. It fails when one
// of r's programs cannot be looked into while it runs, or holds such a file mapped with no
// descriptor that a daemon that is not root cannot measure (the kernel lets only a
// privileged reader look through /proc/PID/map_files): what it cannot see is never taken
// for nothing.
func (r *Programs) DiskUsage(ws string) (int64, error) {
	pids := r.pids()
	if len(pids) == 0 {
		return DiskUsage(ws)
	}
	var st unix.Stat_t
	if err := unix.Stat(ws, &st); err != nil {
		return DiskUsage(ws) // which says why
	}
	h := &held{dev: st.Dev, bytes: map[[2]uint64]int64{}, mapped: map[[2]uint64]bool{}}
	for _, pid := range pids {
		if err := h.sandbox(pid); err != nil {
			return 0, err
		}
	}
	for k := range h.bytes {
		delete(h.mapped, k) // another program holds it open: counted
	}
	if len(h.mapped) > 0 {
		return 0, fmt.Errorf("disk usage: a program of the command holds a deleted file of the workspace mapped with no descriptor, which cannot be measured " +
			"(only root may look through /proc/PID/map_files, and only while the program's first thread runs): " +
			"the command was stopped; let it keep a descriptor of the files it maps, or run agentd as root")
	}
	// Held files with no name are counted here, and the walk skips them: one linked
	// meanwhile (O_TMPFILE and linkat) is not counted twice.
	u := &usage{seen: map[[2]uint64]bool{}, held: len(h.bytes) > 0}
	for k := range h.bytes {
		u.seen[k] = true
	}
	n, err := u.walk(ws)
	if err != nil {
		return 0, err
	}
	for _, b := range h.bytes {
		n += b
	}
	return n, nil
}

// Parks says whether r's programs hold, at this look, a place where descriptors wait
// unseen: a unix socket whose queue holds descriptors, or whose waiting connections'
// queues do (a listener: counted in its own where the kernel does, else any listener). A file deleted whose only descriptor waits so is
// in no listing, and no measure counts it: only a command whose programs park can hide
// disk from its measure, so only one that does is charged growth no measure explains
// (WatchDisk). A program that cannot be looked into parks: what cannot be seen is never
// taken for nothing.
func (r *Programs) Parks() bool {
	h := &held{parks: true}
	for _, pid := range r.pids() {
		if err := h.sandbox(pid); err != nil || h.parked {
			return true
		}
	}
	return false
}

func (r *Programs) pids() []int {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	pids := make([]int, 0, len(r.leaders))
	for pid := range r.leaders {
		pids = append(pids, pid)
	}
	return pids
}

// held is what one run's programs hold on the file system dev.
type held struct {
	dev    uint64
	bytes  map[[2]uint64]int64 // (device, inode) of files held, and the disk each takes
	mapped map[[2]uint64]bool  // deleted files mapped with no descriptor that could not be looked at

	parks     bool            // the scan looks for sockets where descriptors wait (Parks), not for files
	parked    bool            // it found one
	listening map[string]bool // inodes of the listening unix sockets in the sandbox's network, once read
}

// sandbox adds what the programs in leader's pid namespace hold: leader's own, when it is
// the namespace's first program, else its child's (bwrap's). A leader whose sandbox is not
// up yet, or gone, holds nothing.
func (h *held) sandbox(leader int) error {
	self, err := nsOf("self")
	if err != nil {
		return fmt.Errorf("disk usage: cannot tell the daemon's pid namespace: %w", err)
	}
	ns, found := [2]uint64{}, false
	candidates := []string{strconv.Itoa(leader)}
	if kids, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", leader, leader)); err == nil {
		candidates = append(candidates, strings.Fields(string(kids))...)
	}
	for _, c := range candidates {
		p, err := openProc(c)
		if err != nil {
			continue
		}
		// A child is the leader's still, not a process that took the pid of one that ended.
		if n, err := p.ns(); err == nil && n != self && (c == candidates[0] || p.parentIs(candidates[0])) {
			ns, found = n, true
		}
		p.close()
		if found {
			break
		}
	}
	if !found {
		return nil
	}
	h.listening = nil // another sandbox may have a network of its own
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return fmt.Errorf("disk usage: cannot list the programs running: %w", err)
	}
	l := &lineage{leader: strconv.Itoa(leader), ns: ns, known: map[string]bool{}, steps: 2*len(procs) + 16}
	root := os.Geteuid() == 0
	for _, e := range procs {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		// Read by the pid, these only pass over what is none of the run's: every program
		// of a daemon that is not root has its uid, and one that is neither in the run's
		// namespace nor unreadable is another's. A pid taken meanwhile is a program
		// started after the listing, which the next look sees.
		if !root && !ownedBy(e.Name(), os.Geteuid()) {
			continue
		}
		if n, err := nsOf(e.Name()); n != ns && !errors.Is(err, fs.ErrPermission) {
			continue
		}
		if err := h.look(e.Name(), l); err != nil {
			return err
		}
	}
	return nil
}

// look adds what process pid holds when it is a program of the run, judged and read
// through one handle of it, so that all of it is of the one process.
func (h *held) look(pid string, l *lineage) error {
	p, err := openProc(pid)
	if err != nil {
		return nil // gone
	}
	defer p.close()
	n, err := p.ns()
	switch {
	case err == nil && n == l.ns:
		return h.process(p)
	case errors.Is(err, fs.ErrPermission) && l.ofRun(p):
		return fmt.Errorf("disk usage: a program of the command made itself unreadable (it runs a program it may not read), "+
			"so what it holds cannot be counted (/proc/%s/ns/pid: %w): the command was stopped; run programs the agent may read, or run agentd as root", pid, err)
	}
	return nil
}

// ownedBy says whether /proc/pid belongs to uid: the process's effective uid, which the
// kernel shows there even for a program that is not dumpable.
func ownedBy(pid string, uid int) bool {
	var st unix.Stat_t
	return unix.Stat("/proc/"+pid, &st) == nil && int(st.Uid) == uid
}

// lineage tells which processes whose pid namespace the daemon may not read are
// programs of one run. Root reads every namespace; a daemon that is not root may not
// read that of a program that is not dumpable and whose memory belongs to a user
// namespace it has no say in: one that ran a program it may not read (execute-only, of
// an owner its sandbox does not map: a program such as Fedora's sudo, mode 4111), which
// the kernel makes not dumpable with its memory in the host's user namespace. Such a
// program could hold a deleted file unseen, so it is told apart by what the kernel keeps
// and no program can change: its uid (the daemon's, the only one its sandbox maps) and
// its ancestry (a program of the sandbox descends from the sandbox's init, the leader's
// child, since an orphan goes to its namespace's init).
type lineage struct {
	leader string
	ns     [2]uint64
	known  map[string]bool // verdicts of this look, by pid
	steps  int             // bounds the parents read in one look (a loop only pid reuse could make)
}

// ofRun says whether process p is a program of the run; when it cannot tell (a parent
// that cannot be followed, or a walk past every process) it says yes: what the measure
// cannot see is never taken for nothing.
func (l *lineage) ofRun(p proc) bool {
	var st unix.Stat_t
	if unix.Fstat(p.fd, &st) != nil || int(st.Uid) != os.Geteuid() {
		return false // gone, or another uid's: no program of the run
	}
	path := []proc{p} // p, then its ancestors as the walk opened them
	defer func() {
		for _, q := range path[1:] {
			q.close()
		}
	}()
	verdict := false
walk:
	for {
		cur := path[len(path)-1]
		if v, ok := l.known[cur.pid]; ok {
			verdict = v
			break
		}
		if cur.pid == l.leader {
			verdict = true
			break
		}
		if len(path) > 1 { // an ancestor whose namespace it may read: judged by it
			if n, err := cur.ns(); err == nil {
				verdict = n == l.ns
				break
			}
		}
		if l.steps--; l.steps < 0 {
			verdict = true
			break
		}
		parent, err := cur.openParent()
		switch {
		case err == nil:
			path = append(path, parent)
		case errors.Is(err, errTop) || gone(err) && len(path) == 1:
			break walk // the top of the tree, or p is gone: no program of the run
		case gone(err):
			// An ancestor ended: its child was handed to another parent, which the walk
			// follows from that child.
			cur.close()
			path = path[:len(path)-1]
		default:
			verdict = true
			break walk
		}
	}
	for _, q := range path {
		l.known[q.pid] = verdict
	}
	return verdict
}

// statFields are the fields of a /proc stat file after the program's name, which may
// hold spaces and parentheses: state, parent, …
func statFields(stat []byte) []string {
	i := bytes.LastIndex(stat, []byte(") "))
	if i < 0 {
		return nil
	}
	return strings.Fields(string(stat[i+2:]))
}

// nsOf is the pid namespace process p (a number or "self") is in.
func nsOf(p string) ([2]uint64, error) {
	var st unix.Stat_t
	err := unix.Stat("/proc/"+p+"/ns/pid", &st)
	return [2]uint64{st.Dev, st.Ino}, err
}

// process adds the files on h.dev that process p holds. Its threads share one memory,
// so its mappings are read once, from the first thread still running (a first thread
// that exited shows none); a thread may have a descriptor table of its own, so each is
// read unless kcmp says it is one already read. A program of many threads and many
// descriptors costs a look one read of each, not one per thread.
func (h *held) process(p proc) error {
	tasks, err := p.list("task")
	if err != nil {
		return h.unread(p, "", err)
	}
	mapsRead := false
	var tables []int // threads whose descriptor tables were read
	for _, t := range tasks {
		dir := "task/" + t
		tid, _ := strconv.Atoi(t)
		if !slices.ContainsFunc(tables, func(o int) bool { return sameFiles(o, tid) }) {
			read, err := h.fds(p, dir)
			if err != nil {
				return err
			}
			if read {
				tables = append(tables, tid)
			}
		}
		if !mapsRead && !h.parks {
			if mapsRead, err = h.maps(p, dir); err != nil {
				return err
			}
		}
	}
	return nil
}

// sameFiles says whether threads a and b share one descriptor table; false when the
// kernel cannot say (then b's is read as well).
func sameFiles(a, b int) bool {
	const kcmpFiles = 2 // KCMP_FILES
	r, _, errno := unix.Syscall6(unix.SYS_KCMP, uintptr(a), uintptr(b), kcmpFiles, 0, 0, 0)
	return errno == 0 && r == 0
}

// fds adds what the thread at dir of p holds through its descriptors, and says whether
// it read them (a thread that is gone holds nothing; one that cannot be read fails the
// measure).
func (h *held) fds(p proc, dir string) (bool, error) {
	fds, err := p.list(dir + "/fd")
	if err != nil {
		return false, h.unread(p, dir, err)
	}
	for _, fd := range fds {
		if h.parks {
			h.socket(p, dir, fd)
		} else {
			h.file(p, dir+"/fd/"+fd)
		}
	}
	return true, nil
}

// socket notes whether descriptor fd of the thread at dir is a socket where descriptors
// may wait: a unix socket whose queue holds some (scm_fds in its fdinfo), one that
// listens where the kernel does not count the queues of the connections waiting on it
// in the listener's (kernelCountsWaitingConnections), or any socket on a kernel whose fdinfo does not say
// (before Linux 5.14). Where it says, a socket with no scm_fds is not unix: it carries
// no descriptors.
func (h *held) socket(p proc, dir, fd string) {
	link, err := p.readlink(dir + "/fd/" + fd)
	ino, ok := strings.CutPrefix(link, "socket:[")
	if err != nil || !ok {
		return
	}
	info, err := p.read(dir + "/fdinfo/" + fd)
	if err != nil {
		return // closed meanwhile
	}
	_, count, shown := bytes.Cut(info, []byte("scm_fds:"))
	if !kernelShowsQueuedFds() {
		h.parked = true
		return
	}
	if !shown {
		return
	}
	n, _, _ := bytes.Cut(count, []byte("\n"))
	if string(bytes.TrimSpace(n)) != "0" || !kernelCountsWaitingConnections() && h.listens(p, dir, strings.TrimSuffix(ino, "]")) {
		h.parked = true
	}
}

// listens says whether the unix socket of inode ino, held by the thread at dir, listens:
// /proc/PID/net/unix lists the sockets of its network by inode, with the flag 0x10000
// (__SO_ACCEPTCON) on a listening one. A list that cannot be read says yes.
func (h *held) listens(p proc, dir, ino string) bool {
	if h.listening == nil {
		list, err := p.read(dir + "/net/unix")
		if err != nil {
			return true
		}
		h.listening = map[string]bool{}
		// Num RefCount Protocol Flags Type St Inode [Path]
		for line := range strings.Lines(string(list)) {
			if f := strings.Fields(line); len(f) > 6 {
				if flags, err := strconv.ParseUint(f[3], 16, 32); err == nil && flags&0x10000 != 0 {
					h.listening[f[6]] = true
				}
			}
		}
	}
	return h.listening[ino]
}

// kernelShowsQueuedFds says whether this kernel's fdinfo of a unix socket says how many
// descriptors wait in its queue (scm_fds, Linux 5.14), looked at once on a socket pair
// of the daemon's own.
var kernelShowsQueuedFds = sync.OnceValue(func() bool {
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(pair[0])
	defer unix.Close(pair[1])
	info, err := os.ReadFile(fmt.Sprintf("/proc/self/fdinfo/%d", pair[0]))
	return err == nil && bytes.Contains(info, []byte("scm_fds:"))
})

// kernelCountsWaitingConnections says whether this kernel counts, in a listening unix
// socket's scm_fds, the descriptors queued in the connections waiting on it (6.18 does):
// then an idle listener (an ssh-agent, a test server) is no place where descriptors wait,
// and only its count says. Looked at once on a listener of the daemon's own.
var kernelCountsWaitingConnections = sync.OnceValue(func() bool {
	l, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(l)
	c, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(c)
	var addr unix.Sockaddr
	if err = unix.Bind(l, &unix.SockaddrUnix{}); err == nil { // an abstract name of the kernel's choosing
		if err = unix.Listen(l, 1); err == nil {
			if addr, err = unix.Getsockname(l); err == nil {
				err = unix.Connect(c, addr)
			}
		}
	}
	if err != nil || unix.Sendmsg(c, []byte("x"), unix.UnixRights(c), nil, 0) != nil {
		return false
	}
	info, err := os.ReadFile(fmt.Sprintf("/proc/self/fdinfo/%d", l))
	_, count, shown := bytes.Cut(info, []byte("scm_fds:"))
	n, _, _ := bytes.Cut(count, []byte("\n"))
	return err == nil && shown && string(bytes.TrimSpace(n)) == "1"
})

// maps adds the deleted files on h.dev that the memory of the thread at dir of p maps,
// and says whether it saw that memory: a thread that exited shows no mappings, and every
// running program has some.
func (h *held) maps(p proc, dir string) (bool, error) {
	maps, err := p.read(dir + "/maps")
	if err != nil {
		return false, h.unread(p, dir, err)
	}
	sc := bufio.NewScanner(bytes.NewReader(maps))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		// start-end perms offset major:minor inode path, " (deleted)" after a file no name
		// leads to (the kernel's mark; a name ending so only fails the measure)
		f := strings.Fields(sc.Text())
		if len(f) < 5 || f[4] == "0" || !bytes.HasSuffix(sc.Bytes(), []byte(" (deleted)")) {
			continue
		}
		maj, min, _ := strings.Cut(f[3], ":")
		ma, err1 := strconv.ParseUint(maj, 16, 32)
		mi, err2 := strconv.ParseUint(min, 16, 32)
		ino, err3 := strconv.ParseUint(f[4], 10, 64)
		if errors.Join(err1, err2, err3) != nil || unix.Mkdev(uint32(ma), uint32(mi)) != h.dev {
			continue
		}
		if _, ok := h.bytes[[2]uint64{h.dev, ino}]; ok {
			continue
		}
		// Only the process has map_files, which a first thread that exited takes with it:
		// a mapping not found there cannot be measured, as one root alone may look at.
		if !h.file(p, "map_files/"+f[0]) {
			h.mapped[[2]uint64{h.dev, ino}] = true
		}
	}
	return len(maps) > 0, nil
}

// file adds the regular file on h.dev with no name left that p's link at name leads
// to, and says whether it could be looked at (a descriptor closed meanwhile holds
// nothing). A file with a name is the walk's to count: in the workspace it finds it, and
// elsewhere on the device (a program of the system a command reads) it is no disk the
// run took. One unlinked just after this look is counted by the next measure, which
// the watch makes every tenth look whatever statfs says.
func (h *held) file(p proc, name string) bool {
	st, err := p.stat(name)
	if err != nil {
		return false
	}
	if st.Dev == h.dev && st.Mode&unix.S_IFMT == unix.S_IFREG && st.Nlink == 0 {
		h.bytes[[2]uint64{st.Dev, st.Ino}] = st.Blocks*512 + MinEntryBytes
	}
	return true
}

// unread is the error of a measure that could not read the descriptors or mappings of
// the thread at dir; nil when it is gone or ending: a zombie, whose files are closed, or
// a thread that has let go of its memory on its way out (exit(2) runs exit_mm, then
// exit_files), whose /proc files the kernel gives to root meanwhile. Programs end all the
// time in a command, so a look often lands there; an ending thread runs no more of the
// program and closes what it holds next, and what marks it (the kernel's PF_EXITING flag
// and no memory) no program can set while it runs, so a program that makes itself
// unreadable is still not counted as nothing.
func (h *held) unread(p proc, dir string, err error) error {
	if gone(err) {
		return nil
	}
	stat, serr := p.read(path.Join(dir, "stat"))
	if gone(serr) {
		return nil // it ended meanwhile
	}
	if serr == nil {
		const pfExiting = 0x4 // PF_EXITING, set as exit(2) begins
		// state ppid pgrp session tty tpgid flags … (the 7th) … vsize (the 21st)
		if f := statFields(stat); len(f) > 20 {
			flags, _ := strconv.ParseUint(f[6], 10, 64)
			if f[0] == "Z" || f[0] == "X" || flags&pfExiting != 0 && f[20] == "0" {
				return nil
			}
		}
	}
	return fmt.Errorf("disk usage: cannot read what a program of the command holds open (%w), so the disk it takes cannot be counted: the command was stopped", err)
}

// gone says whether err is that of a /proc read of a process or thread that is no more.
func gone(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ESRCH)
}
