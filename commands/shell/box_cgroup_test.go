package shell

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/testutil"
	"golang.org/x/sys/unix"
)

func TestFindCgroupsInMountinfo(t *testing.T) {
	tests := []struct {
		name      string
		mountinfo string
		cgroup    string
		want      []string // the mount's folder of the v2 path, or of each controller's v1 path
	}{
		{name: "hybrid_v1_controllers",
			mountinfo: `30 25 0:26 / /sys/fs/cgroup rw - tmpfs tmpfs rw,mode=755
31 30 0:27 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw
33 30 0:29 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct
34 30 0:30 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory
35 30 0:31 / /sys/fs/cgroup/pids rw - cgroup cgroup rw,pids`,
			cgroup: "8:pids:/\n4:memory:/process_api/63bb\n1:cpu,cpuacct:/\n0::/\n",
			want:   []string{"cpu /sys/fs/cgroup/cpu,cpuacct", "memory /sys/fs/cgroup/memory/process_api/63bb", "pids /sys/fs/cgroup/pids", "v2 /sys/fs/cgroup/unified"}},
		{name: "unified_systemd_service",
			mountinfo: `25 24 0:23 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate`,
			cgroup:    "0::/system.slice/agentd.service\n",
			want:      []string{"v2 /sys/fs/cgroup/system.slice/agentd.service"}},
		{name: "container_mount_of_a_subtree",
			mountinfo: `40 39 0:30 /docker/abc /sys/fs/cgroup/memory ro - cgroup cgroup rw,memory`,
			cgroup:    "4:memory:/docker/abc/inner\n",
			want:      []string{"memory /sys/fs/cgroup/memory/inner"}},
		{name: "space_in_mount_point",
			mountinfo: `25 24 0:23 / /mnt/cg\0402 rw - cgroup2 cgroup2 rw`,
			cgroup:    "0::/a\n",
			want:      []string{"v2 /mnt/cg 2/a"}},
		{name: "other_file_systems_ignored",
			mountinfo: `22 1 8:1 / / rw - ext4 /dev/vda rw`,
			cgroup:    "0::/\n",
			want:      nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pc := parseProcCgroup([]byte(tt.cgroup))
			var got []string
			for _, m := range parseMountinfo([]byte(tt.mountinfo)) {
				if m.v2 {
					got = append(got, "v2 "+m.under(pc.v2))
					continue
				}
				for _, c := range m.controllers {
					got = append(got, c+" "+m.under(pc.v1[c]))
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// boxDirs lists the folders of agentID's box, one per hierarchy.
func boxDirs(b *Boxes, agentID string) []string {
	var out []string
	for _, h := range b.hiers {
		out = append(out, filepath.Join(h.own, boxName(agentID)))
	}
	return out
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

// Several daemons in one process (as tests run them) get folders of their own, each
// agent a box in its daemon's folder, and nothing of theirs is left once they close.
func TestBoxesOfEachDaemonAreApart(t *testing.T) {
	b1, b2 := NewBoxes(Limits{}), NewBoxes(Limits{})
	if !b1.Active() {
		line, _ := b1.Describe()
		t.Skipf("no cgroups for agents here: %s", line)
	}
	for _, b := range []*Boxes{b1, b2} {
		r, err := b.enter("a-same")
		if err != nil {
			t.Fatal(err)
		}
		r.leave()
	}
	d1, d2 := boxDirs(b1, "a-same"), boxDirs(b2, "a-same")
	for i := range d1 {
		if d1[i] == d2[i] || !exists(d1[i]) || !exists(d2[i]) {
			t.Errorf("the same agent id in two daemons: boxes %s and %s, want two folders that exist", d1[i], d2[i])
		}
	}
	var instances []string
	for _, b := range []*Boxes{b1, b2} {
		for _, h := range b.hiers {
			instances = append(instances, h.own)
		}
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range instances {
		if exists(d) {
			t.Errorf("%s is left after Close", d)
		}
	}
}

// A box goes with its agent: at once when it runs nothing, else when its run ends. And
// on v1, where agentd forks each program from a thread that joined the box, that thread
// leaves it, and lives on.
func TestRemovedAgentsBoxGoes(t *testing.T) {
	b := NewBoxes(Limits{})
	defer b.Close()
	if !b.Active() {
		line, _ := b.Describe()
		t.Skipf("no cgroups for agents here: %s", line)
	}
	idle, err := b.enter("a-idle")
	if err != nil {
		t.Fatal(err)
	}
	idle.leave()
	b.Remove("a-idle")
	for _, d := range boxDirs(b, "a-idle") {
		if exists(d) {
			t.Errorf("the removed idle agent's box %s is still there", d)
		}
	}

	running, err := b.enter("a-running")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("/bin/sleep", "60")
	if err := running.start(cmd); err != nil {
		t.Fatal(err)
	}
	// The thread that forked it (v1) went back where agentd's threads are, alive: were it
	// to end, the kernel would kill what it forked that asked to die with its parent.
	if running.forker != 0 {
		data, err := os.ReadFile(fmt.Sprintf("/proc/self/task/%d/cgroup", running.forker))
		if err != nil || strings.Contains(string(data), "agent-a-running") {
			t.Errorf("the thread that forked the program: %v, cgroups\n%s\nwant it alive, out of the box", err, data)
		}
	}
	var inBox []string
	if !testutil.Wait(10*time.Second, func() bool {
		inBox = slices.DeleteFunc(tasksOf(os.Getpid()), func(task string) bool { return !strings.Contains(task, "agent-a-running") })
		return len(inBox) == 0
	}) {
		t.Errorf("threads of agentd's stayed in the box: %s", inBox)
	}
	b.Remove("a-running")
	if dirs := boxDirs(b, "a-running"); !exists(dirs[0]) {
		t.Errorf("the box %s went while its program ran", dirs[0])
	}
	running.leave() // kills what is left in the box, then removes it
	untrack(cmd.Process.Pid)
	cmd.Wait()
	b.mu.Lock()
	b.retryDoomedLocked() // the kill was asynchronous: the folder goes once the program is reaped
	b.mu.Unlock()
	for _, d := range boxDirs(b, "a-running") {
		if exists(d) {
			t.Errorf("the removed agent's box %s is still there after its run", d)
		}
	}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
		t.Errorf("the program left in the removed box ended with %v, want killed", cmd.ProcessState)
	}
}

// tasksOf lists the cgroup lines of every thread of pid.
func tasksOf(pid int) []string {
	var out []string
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/cgroup", pid))
	for _, f := range tasks {
		data, _ := os.ReadFile(f)
		out = append(out, strings.Fields(string(data))...)
	}
	return out
}

// Folders left by a daemon killed with -9 (reaped or not yet) are removed when the next
// one starts; those of daemons still running are not.
func TestStaleBoxesRemovedAtStart(t *testing.T) {
	probe := NewBoxes(Limits{})
	if !probe.Active() {
		line, _ := probe.Describe()
		t.Skipf("no cgroups for agents here: %s", line)
	}
	probe.Close()
	gone := exec.Command("/bin/true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	zombie := exec.Command("/bin/sleep", "60")
	if err := zombie.Start(); err != nil {
		t.Fatal(err)
	}
	defer zombie.Wait()
	zombie.Process.Kill() // and not reaped until the test ends
	if !testutil.Wait(10*time.Second, func() bool {
		stat, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", zombie.Process.Pid))
		return strings.Contains(string(stat), ") Z")
	}) {
		t.Fatal("the killed process never became a zombie")
	}
	living := exec.Command("/bin/sleep", "60")
	if err := living.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { living.Process.Kill(); living.Wait() }()
	var stale, kept []string
	for _, h := range probe.hiers {
		own := filepath.Dir(h.own)
		s := filepath.Join(own, fmt.Sprintf("agentd.%d.1", gone.Process.Pid))
		z := filepath.Join(own, fmt.Sprintf("agentd.%d.1", zombie.Process.Pid))
		k := filepath.Join(own, fmt.Sprintf("agentd.%d.1", living.Process.Pid))
		for _, d := range []string{s, filepath.Join(s, "agent-a-left"), z, k} {
			if err := os.Mkdir(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		stale, kept = append(stale, s, z), append(kept, k)
	}
	defer func() {
		for _, d := range append(stale, kept...) {
			removeCgroupTree(d)
		}
	}()
	NewBoxes(Limits{}).Close()
	for _, d := range stale {
		if exists(d) {
			t.Errorf("%s, left by a daemon that is gone, is still there", d)
		}
	}
	for _, d := range kept {
		if !exists(d) {
			t.Errorf("%s, of a process still running, was removed", d)
		}
	}
}

// Without cgroups, Describe says what is weaker than a box per agent, why, and the fix.
func TestBoxesDescribeWhatIsWeaker(t *testing.T) {
	b := &Boxes{limits: Limits{}.withDefaults(), reason: "no cgroup hierarchy offers agentd the pids, memory or cpu controller"}
	line, full := b.Describe()
	for _, want := range []string{"no cgroup per agent", "no cgroup hierarchy offers", "fork bomb", "per process", "CPU", BoxesFix} {
		if !strings.Contains(line, want) {
			t.Errorf("Describe() = %q, want it to say %q", line, want)
		}
	}
	if full {
		t.Error("Describe() says full without cgroups")
	}
	var nilBoxes *Boxes
	if _, full := nilBoxes.Describe(); full {
		t.Error("nil Boxes say full")
	}
}

// v2Mount is where the cgroup v2 hierarchy is mounted whole; the test skips without one.
func v2Mount(t *testing.T) string {
	t.Helper()
	mi, _ := os.ReadFile("/proc/self/mountinfo")
	for _, m := range parseMountinfo(mi) {
		if m.v2 && m.root == "/" {
			return m.dir
		}
	}
	t.Skip("no cgroup v2 hierarchy is mounted here")
	return ""
}

// unifiedHierarchy returns a fresh cgroup v2 folder to test in, removed afterwards, and
// its path in the hierarchy: on hybrid machines the v2 hierarchy has no controllers.
func unifiedHierarchy(t *testing.T) (dir, path string) {
	t.Helper()
	mount := v2Mount(t)
	pc, _ := os.ReadFile("/proc/self/cgroup")
	path = filepath.Join(parseProcCgroup(pc).v2, fmt.Sprintf("agentd-test.%d.%d", os.Getpid(), instanceSeq.Add(1)))
	dir = filepath.Join(mount, path)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Skipf("cannot make a cgroup v2 folder here: %v", err)
	}
	t.Cleanup(func() {
		if err := removeCgroupTree(dir); err != nil {
			t.Error(err)
		}
	})
	return dir, path
}

// On cgroup v2 a program is born in its agent's box (CLONE_INTO_CGROUP): no moment
// outside it in which to fork, and no thread of agentd's ever in it.
func TestBoxesV2ProgramsStartInTheBox(t *testing.T) {
	dir, path := unifiedHierarchy(t)
	b := &Boxes{limits: Limits{}.withDefaults(), hiers: []hierarchy{{v2: true, own: dir}}, boxes: map[string]*agentBox{}}
	defer func() {
		if err := b.Close(); err != nil {
			t.Error(err)
		}
	}()
	r, err := b.enter("a-v2")
	if err != nil {
		t.Fatal(err)
	}
	res, err := runProgram(context.Background(), r, "/", []string{"/bin/cat", "/proc/self/cgroup"}, nil, 4096, nil)
	r.leave()
	if err != nil || res == nil {
		t.Fatal(err)
	}
	want := "0::" + filepath.Join(path, "agent-a-v2")
	if !strings.Contains(string(res.out), want+"\n") {
		t.Errorf("the program's cgroups:\n%s\nwant it in %s", res.out, want)
	}
	for _, task := range tasksOf(os.Getpid()) {
		if strings.Contains(task, "agent-a-v2") {
			t.Errorf("a thread of agentd's is in the box: %s", task)
		}
	}
}

// The v2 rule that a cgroup with controllers for its children holds no process: agentd,
// alone in its cgroup (a systemd service with Delegate=yes), moves itself into a leaf
// and enables them; sharing its cgroup with another process, it says so and enables
// nothing. Run in a child process born in a cgroup of its own, with hugetlb standing in
// for the controllers a hybrid machine keeps in v1.
func TestBoxesV2DaemonMovesIntoALeaf(t *testing.T) {
	if os.Getenv("AGENTD_TEST_ENABLE_V2") != "" {
		own, ctrl := os.Getenv("AGENTD_TEST_ENABLE_V2"), os.Getenv("AGENTD_TEST_CONTROLLER")
		base, err := enableV2(own, []string{ctrl})
		fmt.Printf("base=%s err=%v\n", base, err)
		os.Exit(0)
	}
	// hugetlb, which nothing here uses, is enabled for the v2 root's children while the
	// test runs, if it is not already.
	mount, ctrl := v2Mount(t), "hugetlb"
	if have, _ := os.ReadFile(filepath.Join(mount, "cgroup.controllers")); !slices.Contains(strings.Fields(string(have)), ctrl) {
		t.Skipf("the v2 hierarchy offers no controller to stand in (it has %q)", have)
	}
	if on, _ := os.ReadFile(filepath.Join(mount, "cgroup.subtree_control")); !slices.Contains(strings.Fields(string(on)), ctrl) {
		if err := enableControllers(mount, []string{ctrl}); err != nil {
			t.Skipf("cannot enable %s in the v2 hierarchy: %v", ctrl, err)
		}
		t.Cleanup(func() { writeCgroup(mount, "cgroup.subtree_control", "-"+ctrl) })
	}
	dir, _ := unifiedHierarchy(t)
	if err := enableControllers(dir, []string{ctrl}); err != nil {
		t.Fatal(err)
	}
	run := func(dir string, with ...*exec.Cmd) string {
		fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Close(fd)
		cmd := exec.Command(os.Args[0], "-test.run=^TestBoxesV2DaemonMovesIntoALeaf$")
		cmd.Env = append(os.Environ(), "AGENTD_TEST_ENABLE_V2="+dir, "AGENTD_TEST_CONTROLLER="+ctrl)
		cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		return string(out)
	}

	alone := filepath.Join(dir, "alone")
	os.Mkdir(alone, 0o755)
	out := run(alone)
	sub, _ := os.ReadFile(filepath.Join(alone, "cgroup.subtree_control"))
	if !strings.Contains(out, "base="+alone+" err=<nil>") || !strings.Contains(string(sub), ctrl) {
		t.Errorf("alone in its cgroup: %s subtree_control %q, want %s enabled", out, sub, ctrl)
	}

	shared := filepath.Join(dir, "shared")
	os.Mkdir(shared, 0o755)
	other := exec.Command("/bin/sleep", "60")
	fd, _ := unix.Open(shared, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	other.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	unix.Close(fd)
	defer func() { other.Process.Kill(); other.Wait() }()
	out = run(shared)
	if !strings.Contains(out, "other processes share agentd's cgroup "+shared) || !strings.Contains(out, "Delegate=yes") {
		t.Errorf("sharing its cgroup: %s, want it to say so and name the fix", out)
	}
}

// A run stopped on the box's out-of-memory event says so, even when agentd's stop came
// before the kernel killed anything and the kernel's count did not move.
func TestOutOfMemoryEventIsNamedWithoutAKernelKill(t *testing.T) {
	fired := make(chan struct{})
	close(fired)
	r := &boxRun{b: &Boxes{}, limits: Limits{Memory: 2 << 30}, oomFired: fired}
	if got := r.note(); !strings.Contains(got, "out of memory") || !strings.Contains(got, "memory limit of 2 GiB") ||
		!strings.Contains(got, "agentd stopped the command") || strings.Contains(got, "kernel killed") {
		t.Errorf("note after an OOM event alone = %q", got)
	}
	if got := (&boxRun{b: &Boxes{}, limits: Limits{Memory: 2 << 30}}).note(); got != "" {
		t.Errorf("note with no OOM event and no kill = %q; want none", got)
	}
}
