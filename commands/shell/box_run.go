package shell

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"github.com/agentd/agentd/internal/display"
	"golang.org/x/sys/unix"
)

// boxRun is one program run in an agent's box: it starts the program inside, watches
// for the box running out of memory, and says afterwards what the box's limits did.
// Its methods do nothing on a nil boxRun (no boxes): the program starts where agentd is.
type boxRun struct {
	b           *Boxes
	box         *agentBox
	limits      Limits
	oomBefore   int64 // the box's OOM kills before the run
	forksBefore int64 // its forks refused by the process limit before the run
	oomFile     *os.File
	oomFired    chan struct{} // v1: closed when the kernel reports the box out of memory
	v2          bool          // the box is a cgroup v2 one
	forker      int           // v1: the thread that forked the program
}

// enter readies a run of agentID's programs in its box, making the box the first time.
// It returns nil, nil without boxes. An error means the box cannot be had though
// boxes are on: the command is refused rather than run with less than it was promised.
func (b *Boxes) enter(agentID string) (*boxRun, error) {
	if !b.Active() {
		return nil, nil
	}
	b.mu.Lock()
	box, err := b.openLocked(agentID)
	if err == nil {
		box.runs++
	}
	b.mu.Unlock()
	if err != nil {
		return nil, err
	}
	r := &boxRun{b: b, box: box, limits: b.limits, v2: b.hiers[0].v2}
	r.oomBefore, r.forksBefore = r.counts()
	if !r.v2 {
		if dir := r.dir("memory"); dir != "" {
			r.watchOOM(dir) // best effort: without it the kernel still kills, one process at a time
		}
	}
	return r, nil
}

// dir is the box's folder in the hierarchy of controller c, or "".
func (r *boxRun) dir(c string) string {
	for i, h := range r.b.hiers {
		for _, hc := range h.controllers {
			if hc == c {
				return r.box.dirs[i]
			}
		}
	}
	return ""
}

// counts reads the box's OOM kills and refused forks so far.
func (r *boxRun) counts() (oom, forks int64) {
	if d := r.dir("memory"); d != "" {
		if r.v2 {
			oom = counter(filepath.Join(d, "memory.events"), "oom_kill")
		} else {
			oom = counter(filepath.Join(d, "memory.oom_control"), "oom_kill")
		}
	}
	if d := r.dir("pids"); d != "" {
		forks = counter(filepath.Join(d, "pids.events"), "max")
	}
	return oom, forks
}

// watchOOM asks the v1 memory controller to tell, through an eventfd, when the box runs
// out of memory, so that the whole command is stopped then, as v2's memory.oom.group does.
func (r *boxRun) watchOOM(dir string) {
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return
	}
	ev := os.NewFile(uintptr(efd), "oom-eventfd")
	ctl, err := os.Open(filepath.Join(dir, "memory.oom_control"))
	if err != nil {
		ev.Close()
		return
	}
	defer ctl.Close() // the registration holds its own reference
	if writeCgroup(dir, "cgroup.event_control", fmt.Sprintf("%d %d", efd, ctl.Fd())) != nil {
		ev.Close()
		return
	}
	r.oomFile, r.oomFired = ev, make(chan struct{})
	go func() {
		var buf [8]byte
		if n, _ := ev.Read(buf[:]); n == 8 { // ends with an error when leave closes it
			close(r.oomFired)
		}
	}()
}

// oom is closed when the box ran out of memory during the run (v1); nil otherwise.
func (r *boxRun) oom() <-chan struct{} {
	if r == nil {
		return nil
	}
	return r.oomFired
}

// start starts cmd in the box, tracked as startTracked does. On v2 the kernel makes the
// child in the box (CLONE_INTO_CGROUP). On v1, where it cannot, the child is forked by a
// thread of agentd's that joins the box first and leaves it after, so that the child is
// in the box from its first instruction, before it can fork or allocate. That thread is
// never agentd's main thread, whose mm v1 charges memory to, and it never ends: a
// thread's end kills the children it forked that asked to die with their parent, as
// bwrap (--die-with-parent) does.
func (r *boxRun) start(cmd *exec.Cmd) error {
	if r == nil {
		return startTracked(cmd)
	}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	if r.v2 {
		cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, r.box.fd
		return startTracked(cmd)
	}
	done := make(chan error, 1)
	var fork func()
	fork = func() {
		runtime.LockOSThread()
		if unix.Gettid() == os.Getpid() {
			go fork() // on another thread: this one is locked here meanwhile
			runtime.UnlockOSThread()
			return
		}
		r.forker = unix.Gettid()
		tid := strconv.Itoa(r.forker)
		err := r.moveThread(tid, r.box.dirs)
		if err == nil {
			err = startTracked(cmd)
		}
		if r.moveThread(tid, r.homes()) != nil {
			// Stuck in the box, the thread may run no more of agentd's code, nor end.
			done <- err
			select {}
		}
		runtime.UnlockOSThread()
		done <- err
	}
	go fork()
	if err := <-done; err != nil {
		return fmt.Errorf("starting it in the agent's cgroup: %w", err)
	}
	return nil
}

// homes are agentd's own folders in the v1 hierarchies, where its threads belong.
func (r *boxRun) homes() []string {
	var out []string
	for _, h := range r.b.hiers {
		out = append(out, filepath.Dir(h.own))
	}
	return out
}

// moveThread moves the thread tid into each of dirs (v1's tasks file moves one thread).
func (r *boxRun) moveThread(tid string, dirs []string) error {
	for _, d := range dirs {
		if err := writeCgroup(d, "tasks", tid); err != nil {
			return err
		}
	}
	return nil
}

// oomEventFired reports whether the v1 OOM event came during the run.
func (r *boxRun) oomEventFired() bool {
	select {
	case <-r.oomFired: // nil without a watch: never ready
		return true
	default:
		return false
	}
}

// oomStopped says who stopped the command once the box ran out of memory.
func oomStopped(killed int64) string {
	if killed > 0 {
		return fmt.Sprintf("the kernel killed %d and agentd stopped the command", killed)
	}
	return "agentd stopped the command"
}

// note is what the box's limits did during the run, for the command's result: the
// memory limit reached and the command killed, forks refused at the process limit.
func (r *boxRun) note() string {
	if r == nil {
		return ""
	}
	oom, forks := r.counts()
	var notes []string
	// The kernel's count and its OOM event race agentd's stop: when agentd kills the
	// command on the event first, the kernel may have no process left to kill.
	killed := oom - r.oomBefore
	if killed > 0 || r.oomEventFired() {
		notes = append(notes, fmt.Sprintf("[killed: out of memory. The agent's processes together reached their memory limit of %s "+
			"([shell] memory); %s]", display.Size(r.limits.Memory), oomStopped(killed)))
	}
	if n := forks - r.forksBefore; n > 0 {
		notes = append(notes, fmt.Sprintf("[%d forks failed: the agent's processes reached their limit of %d ([shell] procs)]", n, r.limits.Procs))
	}
	return strings.Join(notes, "\n")
}

// leave ends the run: the OOM watch stops and, once no run of the agent is left, what
// remains in the box is killed, and a box removed meanwhile is destroyed.
func (r *boxRun) leave() {
	if r == nil {
		return
	}
	if r.oomFile != nil {
		r.oomFile.Close()
	}
	b := r.b
	b.mu.Lock()
	defer b.mu.Unlock()
	r.box.runs--
	if r.box.runs > 0 {
		return
	}
	if r.box.removed {
		b.destroyLocked(r.box)
		return
	}
	killBox(r.box)
}
