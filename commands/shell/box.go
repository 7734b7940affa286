package shell

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agentd/agentd/internal/display"
	"golang.org/x/sys/unix"
)

// Boxes give each agent's programs a cgroup of their own: the processes, memory and CPU
// of everything one agent runs are bounded together, and one agent cannot use up what
// another's programs need. An agent's box is made the first time it runs a program and
// kept until it is removed (Remove) or the daemon stops (Close).
//
// Where no cgroup can be had (no delegated cgroup v2 subtree and no writable v1
// hierarchy, as for a non-root agentd outside a systemd service), Boxes place nothing and
// Describe says what is weaker: the sandbox's per-process rlimits are what remains. The
// zero and nil Boxes place nothing either.
//
// Lifecycle: NewBoxes once per daemon, shared through Options.Boxes by every command that
// runs programs; Remove when an agent is deleted; Close after the last command ended.
type Boxes struct {
	limits Limits
	hiers  []hierarchy // with own replaced by this instance's folder
	reason string      // why there are no boxes, or which controllers are missing

	mu     sync.Mutex
	boxes  map[string]*agentBox
	doomed []*agentBox // removed, but some process was still leaving: rmdir again later
	closed bool
}

// agentBox is one agent's cgroup, a folder in each hierarchy.
type agentBox struct {
	dirs    []string // in Boxes.hiers' order
	fd      int      // v2: the folder, opened for CLONE_INTO_CGROUP; else -1
	runs    int      // programs running in it now
	removed bool     // Remove was called: destroy it when the last run leaves
}

// NewBoxes finds the cgroups agentd may use and makes this daemon's folder in them,
// removing those left by daemons killed before they could. It never fails: without
// cgroups the Boxes place nothing, and Describe says why. l bounds each agent: Procs
// (pids), Memory (memory, swap included) and CPUPercent (cpu); zero fields take the
// defaults of Limits.
func NewBoxes(l Limits) *Boxes {
	b := &Boxes{limits: l.withDefaults(), boxes: map[string]*agentBox{}}
	hiers, err := findHierarchies()
	if err == nil {
		hiers, err = makeInstances(hiers)
	}
	if err != nil {
		b.reason = err.Error()
		return b
	}
	b.hiers = hiers
	var missing []string
	for _, c := range boxControllers {
		if !b.has(c) {
			missing = append(missing, c)
		}
	}
	if len(missing) > 0 {
		b.reason = "no " + strings.Join(missing, " or ") + " controller for agentd"
	}
	return b
}

// makeInstances makes an instance folder in each hierarchy, after removing stale ones.
func makeInstances(hiers []hierarchy) ([]hierarchy, error) {
	var made []string
	undo := func() {
		for _, d := range made {
			unix.Rmdir(d)
		}
	}
	for i := range hiers {
		h := &hiers[i]
		if h.v2 {
			base, err := prepareV2(*h)
			if err != nil {
				return nil, fmt.Errorf("cgroup v2 %s is not delegated to agentd: %w", h.own, err)
			}
			h.own = base
		}
		removeStale(h.own)
		dir, err := makeInstance(h.own)
		if err != nil {
			undo()
			return nil, fmt.Errorf("cannot make agentd's cgroup in %s: %w", h.own, err)
		}
		made = append(made, dir)
		h.own = dir
		if h.v2 {
			if err := enableControllers(dir, h.controllers); err != nil {
				undo()
				return nil, err
			}
		}
	}
	return hiers, nil
}

// has reports whether the boxes bound the controller c.
func (b *Boxes) has(c string) bool {
	return b != nil && slices.ContainsFunc(b.hiers, func(h hierarchy) bool { return slices.Contains(h.controllers, c) })
}

// Active reports whether agents' programs get boxes at all.
func (b *Boxes) Active() bool { return b != nil && len(b.hiers) > 0 }

// Describe is one line for people (agentctl status and doctor, the daemon's log) on how
// agents' programs are bounded together, and whether that is every bound: processes,
// memory and CPU per agent. Otherwise it says what is weaker, and why.
func (b *Boxes) Describe() (line string, full bool) {
	if b == nil {
		b = &Boxes{reason: "not configured"}
	}
	l := b.limits.withDefaults()
	var have, weaker []string
	if b.has("pids") {
		have = append(have, fmt.Sprintf("at most %d processes", l.Procs))
	} else {
		weaker = append(weaker, fmt.Sprintf("processes: the limit of %d counts every agent's programs together (they share one uid), "+
			"so one agent's fork bomb keeps another's commands from starting", l.Procs))
	}
	if b.has("memory") {
		have = append(have, fmt.Sprintf("%s of memory in all", display.Size(l.Memory)))
	} else {
		weaker = append(weaker, fmt.Sprintf("memory: %s is a bound per process, so a command's processes together may use more", display.Size(l.Memory)))
	}
	if b.has("cpu") {
		cpu := "an equal share of the CPU"
		if l.CPUPercent > 0 {
			cpu += fmt.Sprintf(", at most %d%% of one CPU", l.CPUPercent)
		}
		have = append(have, cpu)
	} else {
		weaker = append(weaker, "CPU: no share per agent, so an agent running many busy processes slows the others'")
	}
	var s strings.Builder
	if len(have) > 0 {
		v := "v1"
		if b.hiers[0].v2 {
			v = "v2"
		}
		fmt.Fprintf(&s, "a cgroup %s per agent: %s", v, strings.Join(have, ", "))
	} else {
		s.WriteString("no cgroup per agent")
	}
	if len(weaker) > 0 {
		fmt.Fprintf(&s, "; weaker (%s): %s. Fix: %s", b.reason, strings.Join(weaker, "; "), BoxesFix)
	}
	return s.String(), len(weaker) == 0
}

// BoxesFix is what gives agentd cgroups where it has none.
const BoxesFix = "run agentd as root, or as the systemd service (systemd/agentd.service, Delegate=yes) on cgroup v2"

// Remove destroys an agent's box, now or, while a program of it still runs, when that ends.
func (b *Boxes) Remove(agentID string) {
	if !b.Active() {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	box := b.boxes[agentID]
	if box == nil {
		return
	}
	delete(b.boxes, agentID)
	box.removed = true
	if box.runs == 0 {
		b.destroyLocked(box)
	}
}

// Close destroys every box and this daemon's folders, waiting for programs still
// leaving (closeWait: a program the kernel killed for its memory frees gigabytes first,
// which a busy machine takes seconds to do). Call it once no command runs.
func (b *Boxes) Close() error {
	if !b.Active() {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	for id, box := range b.boxes {
		delete(b.boxes, id)
		box.removed = true
		b.destroyLocked(box)
	}
	var errs []error
	deadline := time.Now().Add(closeWait)
	for _, h := range b.hiers {
		for {
			b.retryDoomedLocked()
			err := removeCgroupTree(h.own)
			if err == nil || time.Now().After(deadline) {
				errs = append(errs, err)
				break
			}
			time.Sleep(10 * time.Millisecond) // killed processes still exiting: rare, at shutdown only
		}
	}
	return errors.Join(errs...)
}

// closeWait bounds how long Close waits for the programs of its boxes to be gone.
const closeWait = 15 * time.Second

// validBoxName is an agent id used as it is in its box's name.
var validBoxName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// boxName is the folder name of agentID's box: "agent-" and the id, or a hash of an id
// that is not a plain name.
func boxName(agentID string) string {
	if !validBoxName.MatchString(agentID) {
		sum := sha256.Sum256([]byte(agentID))
		agentID = hex.EncodeToString(sum[:8])
	}
	return "agent-" + agentID
}

// openLocked returns agentID's box, making it with its limits the first time. Caller holds b.mu.
func (b *Boxes) openLocked(agentID string) (*agentBox, error) {
	if box := b.boxes[agentID]; box != nil {
		return box, nil
	}
	if b.closed {
		return nil, errors.New("agentd is stopping")
	}
	b.retryDoomedLocked()
	box := &agentBox{fd: -1}
	name := boxName(agentID)
	for _, h := range b.hiers {
		dir := filepath.Join(h.own, name)
		if err := os.Mkdir(dir, 0o755); err != nil && !os.IsExist(err) {
			b.destroyLocked(box)
			return nil, fmt.Errorf("cannot make the agent's cgroup: %w", err)
		}
		box.dirs = append(box.dirs, dir)
		if err := b.limit(h, dir); err != nil {
			b.destroyLocked(box)
			return nil, fmt.Errorf("cannot limit the agent's cgroup: %w", err)
		}
	}
	if b.hiers[0].v2 {
		fd, err := unix.Open(box.dirs[0], unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			b.destroyLocked(box)
			return nil, fmt.Errorf("cannot open the agent's cgroup: %w", err)
		}
		box.fd = fd
	}
	b.boxes[agentID] = box
	return box, nil
}

// limit writes the limits of h's controllers to the box folder dir.
func (b *Boxes) limit(h hierarchy, dir string) error {
	l := b.limits
	quota := "max"
	if l.CPUPercent > 0 {
		quota = strconv.Itoa(l.CPUPercent * 1000)
	}
	mem := strconv.FormatInt(l.Memory, 10)
	type knob struct {
		file, value string
		optional    bool // missing on some kernels or configurations
	}
	var knobs []knob
	for _, c := range h.controllers {
		switch {
		case c == "pids":
			knobs = append(knobs, knob{file: "pids.max", value: strconv.Itoa(l.Procs)})
		case c == "memory" && h.v2:
			// One bound for memory and swap together, and the whole box killed at once
			// when it is reached, rather than one process picked.
			knobs = append(knobs, knob{file: "memory.max", value: mem}, knob{file: "memory.swap.max", value: "0", optional: true},
				knob{file: "memory.oom.group", value: "1", optional: true})
		case c == "memory":
			knobs = append(knobs, knob{file: "memory.limit_in_bytes", value: mem},
				knob{file: "memory.memsw.limit_in_bytes", value: mem, optional: true})
		case c == "cpu" && h.v2:
			knobs = append(knobs, knob{file: "cpu.max", value: quota + " 100000"})
		case c == "cpu":
			if quota == "max" {
				quota = "-1"
			}
			knobs = append(knobs, knob{file: "cpu.cfs_period_us", value: "100000"}, knob{file: "cpu.cfs_quota_us", value: quota})
		}
	}
	for _, k := range knobs {
		if err := writeCgroup(dir, k.file, k.value); err != nil && !(k.optional && errors.Is(err, os.ErrNotExist)) {
			return err
		}
	}
	return nil
}

// destroyLocked kills what is left in box and removes its folders; those some process
// still holds are tried again later. Caller holds b.mu.
func (b *Boxes) destroyLocked(box *agentBox) {
	if box.fd >= 0 {
		unix.Close(box.fd)
		box.fd = -1
	}
	killBox(box)
	if !removeBox(box) {
		b.doomed = append(b.doomed, box)
	}
}

// retryDoomedLocked removes the removed boxes whose processes have gone since.
func (b *Boxes) retryDoomedLocked() {
	b.doomed = slices.DeleteFunc(b.doomed, func(box *agentBox) bool {
		killBox(box)
		return removeBox(box)
	})
}

// removeBox removes box's folders, reporting whether all are gone.
func removeBox(box *agentBox) bool {
	gone := true
	for _, d := range box.dirs {
		if err := unix.Rmdir(d); err != nil && !errors.Is(err, unix.ENOENT) {
			gone = false
		}
	}
	return gone
}

// killBox kills every process left in box: v2 at once (cgroup.kill), else one by one.
// Under bwrap none is (the pid namespace dies with its first process); without a sandbox
// a program that left its session would otherwise outlive its command.
func killBox(box *agentBox) {
	for _, d := range box.dirs {
		if writeCgroup(d, "cgroup.kill", "1") == nil {
			continue
		}
		procs, err := os.ReadFile(filepath.Join(d, "cgroup.procs"))
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(procs)) {
			if pid, err := strconv.Atoi(f); err == nil && pid > 1 && pid != os.Getpid() {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
}
