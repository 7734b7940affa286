package shell

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/agentd/agentd/commands"
)

// drainLimit is how much output past the cap is read and thrown away before the program is
// killed: enough for a verbose build to finish, not so much that `yes` runs until the timeout.
const drainLimit = 64 << 20

// readGrace is how long the output is read on after the process group is gone: only a
// process that left the group (setsid) can still hold the pipe open by then.
const readGrace = 50 * time.Millisecond

// runResult is what one program did.
type runResult struct {
	out     []byte // the first cap bytes of stdout and stderr, interleaved as written
	total   int64  // bytes written in all
	flooded bool   // killed for writing more than cap+drainLimit bytes
	state   *os.ProcessState
	box     string // what the agent's box did: memory run out, forks refused
}

// runProgram starts argv in dir with env, stdin /dev/null and stdout and stderr into one pipe, in
// a process group of its own, and waits for it. When ctx ends, or the program floods its
// output, the whole group is killed; so is whatever it left in the background when it exits.
// It returns a nil result only when the program could not start, or net (when not nil)
// could not give its sandbox the network; a non-nil error otherwise is ctx's. extra are
// given to it from descriptor 3 on, and closed. The program runs in box, the agent's
// cgroup, when it is not nil, and is stopped when the box runs out of memory.
func runProgram(ctx context.Context, box *boxRun, dir string, argv, env []string, limit int, net *netRun, extra ...*os.File) (*runResult, error) {
	defer closeAll(extra)
	defer net.end()
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = dir, env
	cmd.Stdout, cmd.Stderr = pw, pw // nil Stdin is /dev/null
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.ExtraFiles = extra
	err = box.start(cmd)
	pw.Close()
	closeAll(extra) // the child has its copies
	if err != nil {
		pr.Close()
		return nil, err
	}
	pid := cmd.Process.Pid
	counted := commands.ProgramsOf(ctx).Started(pid) // the disk watch counts what its sandbox holds

	res := &runResult{}
	flood := make(chan struct{})
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		res.read(pr, limit, flood)
	}()
	exited := make(chan struct{})
	go func() {
		waitExited(pid)
		close(exited)
	}()

	stopped := net.attach(ctx, pid, box)
	if stopped == nil {
		select {
		case <-exited:
		case <-ctx.Done():
			stopped = ctx.Err()
		case <-flood:
			res.flooded = true
		case <-box.oom():
		}
	}
	// The leader is not reaped yet, so its pid still names our group and no other: killing
	// the group cannot hit a stranger that reused the number.
	killGroup(pid)
	<-exited
	untrack(pid) // before the reap, after which the number may name a stranger
	counted()
	cmd.Wait()
	res.state, res.box = cmd.ProcessState, box.note()

	t := time.NewTimer(readGrace)
	select {
	case <-readDone:
	case <-t.C:
		pr.Close() // ends the blocked Read
		<-readDone
	}
	t.Stop()
	pr.Close()
	if stopped != nil && !errors.Is(stopped, ctx.Err()) { // the network did not come up: the program never ran
		if out, _ := res.kept(); len(bytes.TrimSpace(out)) > 0 {
			return nil, fmt.Errorf("%w (the sandbox: %s)", stopped, bytes.TrimSpace(out))
		}
		return nil, stopped
	}
	return res, stopped
}

func closeAll(files []*os.File) {
	for _, f := range files {
		if f != nil {
			f.Close()
		}
	}
}

// killGroup kills the program's process group and, first, the program's children. Under
// bwrap the child is the sandbox's pid namespace init, and the whole namespace dies with
// it: the command is gone even if bwrap's parent-death signal is late or lost.
func killGroup(pid int) {
	killChildren(pid)
	syscall.Kill(-pid, syscall.SIGKILL)
}

// killChildren kills the children of pid, which is not reaped yet. Each child is held as a
// pidfd and checked to be pid's still before it is signalled, so that a number reused by a
// stranger meanwhile is never hit. Without /proc's children list it does nothing.
func killChildren(pid int) {
	list, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	if err != nil {
		return
	}
	for _, f := range strings.Fields(string(list)) {
		child, err := strconv.Atoi(f)
		if err != nil {
			continue
		}
		fd, err := unix.PidfdOpen(child, 0)
		if err != nil {
			continue
		}
		if ppid, ok := parentOf(child); ok && ppid == pid {
			unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
		}
		unix.Close(fd)
	}
}

// waitExited blocks until pid has exited, without reaping it (WNOWAIT); on an unexpected
// error it returns at once, and the caller kills the group, which is still safe.
func waitExited(pid int) {
	const pPID = 1            // P_PID
	var info [128]byte        // a siginfo_t, unread
	const wNoWait = 0x1000000 // WNOWAIT
	for {
		_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, pPID, uintptr(pid),
			uintptr(unsafe.Pointer(&info[0])), syscall.WEXITED|wNoWait, 0, 0)
		if errno != syscall.EINTR {
			return
		}
	}
}

// read keeps the first limit bytes from f and counts the rest, closing flood once the
// program has written drainLimit bytes past the cap. It reads until EOF or an error.
func (r *runResult) read(f *os.File, limit int, flood chan<- struct{}) {
	buf := make([]byte, 32<<10)
	for {
		n, err := f.Read(buf)
		if n > 0 {
			if keep := limit - len(r.out); keep > 0 {
				r.out = append(r.out, buf[:min(n, keep)]...)
			}
			r.total += int64(n)
			if flood != nil && r.total > int64(limit)+drainLimit {
				close(flood)
				flood = nil
			}
		}
		if err != nil {
			return
		}
	}
}

// kept is the output kept, not ending on half a character, and whether it was cut.
func (r *runResult) kept() ([]byte, bool) {
	out := r.out
	cut := r.total > int64(len(out))
	if cut {
		for i := len(out) - 1; i >= 0 && i >= len(out)-utf8.UTFMax; i-- {
			if utf8.RuneStart(out[i]) {
				if !utf8.FullRune(out[i:]) {
					out = out[:i]
				}
				break
			}
		}
	}
	return out, cut
}

// text renders the result for the model: the output, a note when it was cut, and the exit
// status ("exit status 2", "signal: killed") on the last line.
func (r *runResult) text() string {
	var b strings.Builder
	out, cut := r.kept()
	b.Write(out)
	if len(out) > 0 && out[len(out)-1] != '\n' {
		b.WriteByte('\n')
	}
	switch {
	case r.total == 0:
		b.WriteString("(no output)\n")
	case r.flooded:
		fmt.Fprintf(&b, "[output cut at %d bytes; killed after writing more than %d]\n", len(out), r.total)
	case cut:
		fmt.Fprintf(&b, "[output cut at %d of %d bytes]\n", len(out), r.total)
	}
	if r.box != "" {
		b.WriteString(r.box + "\n")
	}
	if r.state != nil {
		b.WriteString(r.state.String())
	}
	return b.String()
}
