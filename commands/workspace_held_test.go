package commands

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/testutil"
)

// held8MiB is what the programs below hold on the workspace's file system with no name.
const held8MiB = 8 << 20

// startInPidNamespace starts script with sh in ws, in a pid namespace of its own (and a
// user namespace when the test is not root, as the sandbox does), counted in the
// returned Programs, and waits for it to print "ready". The program is killed at the end.
func startInPidNamespace(t testing.TB, ws, script string) *Programs {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Dir = ws
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID, Pdeathsig: syscall.SIGKILL}
	if os.Geteuid() != 0 {
		cmd.SysProcAttr.Cloneflags |= syscall.CLONE_NEWUSER
		cmd.SysProcAttr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Geteuid(), Size: 1}}
		cmd.SysProcAttr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getegid(), Size: 1}}
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Skipf("cannot start a program in a pid namespace of its own here: %v", err)
	}
	p := &Programs{}
	end := p.Started(cmd.Process.Pid)
	t.Cleanup(func() {
		end()
		cmd.Process.Kill()
		cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if strings.TrimSpace(line) != "ready" {
		t.Fatalf("the program did not get ready: %q %v", line, err)
	}
	return p
}

func TestProgramsDiskUsageCountsAFileItsProgramKeepsOpenAfterDeletingIt(t *testing.T) {
	testutil.AsRootAndNot(t, programKeepsDeletedFileOpen)
}

func programKeepsDeletedFileOpen(t *testing.T) {
	ws := t.TempDir()
	os.WriteFile(ws+"/small", []byte("x"), 0o644)
	p := startInPidNamespace(t, ws, `exec 3>h; rm h; head -c 8388608 /dev/zero >&3; echo ready; exec sleep 600`)
	named, err := DiskUsage(ws)
	if err != nil {
		t.Fatal(err)
	}
	all, err := p.DiskUsage(ws)
	if err != nil {
		t.Fatal(err)
	}
	if named >= held8MiB || all < named+held8MiB {
		t.Fatalf("the walk counts %d bytes and the run's measure %d: want the 8 MiB the program holds with no name counted by the run's measure only", named, all)
	}
	// The watch, with a budget the walk alone keeps within, cuts.
	cut := make(chan error, 1)
	stop := WatchDisk(ws, named+held8MiB/2, DiskFloor, time.Millisecond, func() (int64, error) { return p.DiskUsage(ws) }, parking,
		func(n int64, err error) { cut <- err })
	defer stop()
	select {
	case err := <-cut:
		if err != nil {
			t.Fatalf("cut because the measure failed (%v), want over the budget", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the watch never cut a run holding 8 MiB with no name past a 4 MiB budget")
	}
}

// A file the program maps and no longer has a descriptor of is held by the mapping alone:
// root counts it; a daemon that is not root cannot look at it and the measure fails.
func TestProgramsDiskUsageCountsOrFailsOnADeletedFileHeldOnlyByAMapping(t *testing.T) {
	testutil.AsRootAndNot(t, programMapsDeletedFile)
}

func programMapsDeletedFile(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3 to map a file with")
	}
	ws := t.TempDir()
	p := startInPidNamespace(t, ws, `exec `+python+` -c '
import mmap, os, time
fd = os.open("h", os.O_RDWR | os.O_CREAT, 0o600)
os.unlink("h")
os.ftruncate(fd, 8 << 20)
m = mmap.mmap(fd, 8 << 20)
for d in os.listdir("/proc/self/fd"):  # the copy mmap keeps too: the mapping alone holds the file
    if int(d) > 2:
        try:
            os.close(int(d))
        except OSError:
            pass
m[:] = b"x" * (8 << 20)
m.flush()
print("ready", flush=True)
time.sleep(600)
'`)
	countsOrFails(t, p, ws, "cannot be measured")
}

// countsOrFails checks the measure of ws with p's programs, which hold 8 MiB there with
// no name in a way only root may read: root counts them; a daemon that is not root fails
// saying want, as a measure does when it cannot see.
func countsOrFails(t *testing.T, p *Programs, ws, want string) {
	t.Helper()
	named, err := DiskUsage(ws)
	if err != nil {
		t.Fatal(err)
	}
	all, err := p.DiskUsage(ws)
	if os.Geteuid() != 0 {
		testutil.WantErr(t, err, want)
		return
	}
	if err != nil || all < named+held8MiB {
		t.Fatalf("the walk counts %d bytes and the run's measure %d (%v): want the 8 MiB its programs hold with no name counted", named, all, err)
	}
}

// A program that is gone holds nothing: the measure is the walk's once the run ended.
func TestProgramsDiskUsageIsTheWalkOnceItsProgramsAreGone(t *testing.T) {
	ws := t.TempDir()
	p := startInPidNamespace(t, ws, `exec 3>h; rm h; head -c 8388608 /dev/zero >&3; echo ready; exec sleep 600`)
	for _, pid := range p.pids() {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	named, err := DiskUsage(ws)
	if err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, time.Minute, "the killed program's file to be freed", func() bool {
		all, err := p.DiskUsage(ws)
		return err == nil && all == named
	})
}

// A file with a name is the walk's: one in the workspace counts once, and one elsewhere
// on the workspace's file system (a program of the system a command reads) counts not
// at all, whatever its size.
func TestProgramsDiskUsageCountsNoNamedFileTwiceNorOneOutsideTheWorkspace(t *testing.T) {
	testutil.AsRootAndNot(t, programHoldsNamedFiles)
}

func programHoldsNamedFiles(t *testing.T) {
	ws, outside := t.TempDir(), t.TempDir()
	for _, f := range []string{ws + "/inside", outside + "/big"} {
		if err := os.WriteFile(f, make([]byte, held8MiB), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p := startInPidNamespace(t, ws, `exec 3<inside 4<`+outside+`/big; echo ready; exec sleep 600`)
	named, err := DiskUsage(ws)
	if err != nil {
		t.Fatal(err)
	}
	all, err := p.DiskUsage(ws)
	if err != nil || all != named {
		t.Fatalf("the walk counts %d bytes and the run's measure %d (%v): want the same, the named file inside once and the one outside not at all", named, all, err)
	}
}

// What a look of the disk watch costs on a 1,000-file workspace while a program in a pid
// namespace of its own holds a file there with no name: statfs (every look), the walk
// alone (before), and the walk with the scan of the run's programs (what a measure costs
// now; its share of /proc's listing grows with the programs running on the machine),
// and the scan for sockets where descriptors wait, which only a charge runs.
func BenchmarkDiskWatchLook(b *testing.B) {
	ws := b.TempDir()
	for i := range 1000 {
		if err := os.WriteFile(fmt.Sprintf("%s/f%d", ws, i), []byte("x"), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	p := startInPidNamespace(b, ws, `exec 3>h; rm h; head -c 1048576 /dev/zero >&3; echo ready; exec sleep 600`)
	procs, _ := os.ReadDir("/proc")
	b.Logf("%d entries in /proc", len(procs))
	b.Run("statfs", func(b *testing.B) {
		for b.Loop() {
			FSUsed(ws)
		}
	})
	b.Run("walk", func(b *testing.B) {
		for b.Loop() {
			if _, err := DiskUsage(ws); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("walk_and_scan", func(b *testing.B) {
		for b.Loop() {
			if _, err := p.DiskUsage(ws); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parks_scan", func(b *testing.B) { // only when the ledger would charge
		for b.Loop() {
			p.Parks()
		}
	})
}

// A program that runs a program it may not read is made not dumpable by the kernel with
// its memory in the host's user namespace, so a daemon that is not root may not read even
// its pid namespace: the measure of a run where such a program holds a deleted file
// counts it (root) or fails, never takes it for none of the run's.
func TestProgramsDiskUsageCountsOrFailsOnAProgramWhoseNamespaceItCannotRead(t *testing.T) {
	sleep := testutil.ExecOnlyProgram(t, "/bin/sleep")
	testutil.AsRootAndNot(t, func(t *testing.T) {
		ws := t.TempDir()
		p := startInPidNamespace(t, ws, `exec 3>h; rm h; head -c 8388608 /dev/zero >&3; `+sleep+` 600 & exec 3>&-; echo ready; wait`)
		testutil.Eventually(t, time.Minute, "the program that may only be run to start", func() bool {
			return len(processesNamed(filepath.Base(sleep))) > 0
		})
		countsOrFails(t, p, ws, "made itself unreadable")
	})
}

// processesNamed lists the pids of the processes whose name (comm) is name.
func processesNamed(name string) []string {
	var pids []string
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		if b, err := os.ReadFile(filepath.Join(d, "comm")); err == nil && strings.TrimSpace(string(b)) == name {
			pids = append(pids, filepath.Base(d))
		}
	}
	return pids
}

// A look reads a process through one handle of its /proc directory: once the process has
// ended, nothing is read through it, not even when another process has taken its pid —
// which a read by the pid, as the scan made before, takes for the first one. (Root only:
// the test hands the pid on through /proc/sys/kernel/ns_last_pid.)
func TestALookThroughAProcessHandleNeverReadsTheProcessThatTookItsPid(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("only root may set the next pid")
	}
	ws := t.TempDir()
	var st syscall.Stat_t
	if err := syscall.Stat(ws, &st); err != nil {
		t.Fatal(err)
	}
	first := exec.Command("/bin/sleep", "600")
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	pid := strconv.Itoa(first.Process.Pid)
	h, err := openProc(pid)
	if err != nil {
		t.Fatal(err)
	}
	defer h.close()
	first.Process.Kill()
	first.Wait()
	// The next process to start takes the pid, unless another on the machine starts first.
	var second *exec.Cmd
	for range 200 {
		if err := os.WriteFile("/proc/sys/kernel/ns_last_pid", []byte(strconv.Itoa(first.Process.Pid-1)), 0); err != nil {
			t.Skipf("cannot set the next pid: %v", err)
		}
		c := exec.Command("/bin/sh", "-c", `exec 3>h; rm h; head -c 8388608 /dev/zero >&3; echo ready; exec sleep 600`)
		c.Dir = ws
		out, _ := c.StdoutPipe()
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		if c.Process.Pid == first.Process.Pid {
			bufio.NewReader(out).ReadString('\n')
			second = c
			break
		}
		c.Process.Kill()
		c.Wait()
	}
	if second == nil {
		t.Skip("other processes kept taking the pid first")
	}
	defer func() { second.Process.Kill(); second.Wait() }()
	look := func(p proc) int {
		hd := &held{dev: uint64(st.Dev), bytes: map[[2]uint64]int64{}, mapped: map[[2]uint64]bool{}}
		if err := hd.process(p); err != nil {
			t.Fatal(err)
		}
		return len(hd.bytes)
	}
	if n := look(h); n != 0 {
		t.Errorf("a look through the handle of a process that ended counted %d files of the process that took its pid", n)
	}
	if _, err := h.parent(); !gone(err) {
		t.Errorf("reading the parent of a process that ended through its handle: %v, want it gone", err)
	}
	byPid, err := openProc(pid) // what a read by the pid reads now: the second process
	if err != nil {
		t.Fatal(err)
	}
	defer byPid.close()
	if n := look(byPid); n != 1 {
		t.Fatalf("a look of the process that took the pid counted %d files, want its one deleted file: the test shows nothing", n)
	}
}

// A command's programs park descriptors where no listing shows them only in a unix
// socket's queue, or in that of a connection waiting on a unix socket that listens; a
// socket with an empty queue, an idle listener (where the kernel counts what waits in its
// connections), or a socket that is not unix is no such place, and a command whose
// programs hold none is never charged growth it did not make.
func TestProgramsParkOnlyInAUnixSocketsQueueOrBehindOneThatListens(t *testing.T) {
	for _, tc := range []struct {
		name, code string
		parks      bool
	}{
		{"no socket", "", false},
		{"a unix socket pair with nothing queued", "a, b = socket.socketpair()", false},
		{"a socket that is not unix", "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)", false},
		{"a descriptor in a unix socket's queue", `a, b = socket.socketpair(); socket.send_fds(a, [b"x"], [os.open(".", os.O_RDONLY)])`, true},
		// an ssh-agent, a test server: no place where descriptors wait, where the kernel
		// counts those of the connections waiting on it (else it counts as one)
		{"a unix socket that listens with no connection waiting", `s = socket.socket(socket.AF_UNIX); s.bind(""); s.listen()`, !kernelCountsWaitingConnections()},
		{"a descriptor in a connection waiting on a listener", `s = socket.socket(socket.AF_UNIX); s.bind(""); s.listen(); c = socket.socket(socket.AF_UNIX); c.connect(s.getsockname()); socket.send_fds(c, [b"x"], [os.open(".", os.O_RDONLY)]); c.close()`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws := t.TempDir()
			script := "import os, socket, sys, time\n" + tc.code + "\nprint('ready', flush=True)\ntime.sleep(60)\n"
			if err := os.WriteFile(filepath.Join(ws, "park.py"), []byte(script), 0o644); err != nil {
				t.Fatal(err)
			}
			p := startInPidNamespace(t, ws, "exec python3 park.py")
			if got := p.Parks(); got != tc.parks {
				t.Fatalf("Parks() = %v for a program holding %s; want %v", got, tc.name, tc.parks)
			}
		})
	}
}
