package shell

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/internal/testutil"
)

// boxesHere returns Boxes with l that bound the controllers named, closed when the test
// ends. Without them the test skips, saying why; on CI as root, where this machine has
// them, it fails instead.
func boxesHere(t *testing.T, l Limits, controllers ...string) *Boxes {
	t.Helper()
	b := NewBoxes(l)
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("closing the boxes: %v", err)
		}
	})
	for _, c := range controllers {
		if !b.has(c) {
			line, _ := b.Describe()
			if os.Getenv("CI") == "true" && os.Geteuid() == 0 {
				t.Fatalf("CI runs as root but agents get no %s cgroup: %s", c, line)
			}
			t.Skipf("no %s cgroup for agents here: %s", c, line)
		}
	}
	return b
}

// runAsAgent runs c as agent agentID, as the daemon does.
func runAsAgent(ctx context.Context, t testing.TB, c commands.Command, agentID, ws, line string, timeout time.Duration) (string, error) {
	t.Helper()
	args, err := json.Marshal(shellLine(line))
	if err != nil {
		t.Fatal(err)
	}
	return commands.Run(ctx, c, commands.Env{Workspace: ws, AgentID: agentID}, args, commands.Limits{Timeout: timeout})
}

// One agent that fills its process limit leaves another agent's commands free to fork:
// each agent's box has its own limit, where the sandboxes' shared uid had one for all.
func TestAgentsProcessLimitsAreTheirOwn(t *testing.T) {
	bwrap := bwrapHere(t)
	python, err := lookProgram("", "python3")
	if err != nil {
		t.Skip("python3 is not installed") // sh gives up at its first failed fork
	}
	l := Limits{Procs: 32}
	c := mustShell(t, Options{Sandbox: SandboxBwrap, Bwrap: bwrap, Limits: l, Boxes: boxesHere(t, l, "pids")})
	wsA, wsB := workspace(t), workspace(t)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type result struct {
		out string
		err error
	}
	bombed := make(chan result, 1)
	go func() {
		// More processes than the limit, each holding on; then a file saying so.
		out, err := runAsAgent(ctx, t, c, "a-bomb", wsA, python+` -c "
import os, time
for i in range(100):
    try:
        if os.fork() == 0:
            time.sleep(6017)
    except OSError:
        pass
open('full', 'w').close()
time.sleep(6017)"`, time.Minute)
		bombed <- result{out, err}
	}()
	if !testutil.Wait(30*time.Second, func() bool { _, err := os.Stat(filepath.Join(wsA, "full")); return err == nil }) {
		t.Fatal("the first agent never filled its process limit")
	}

	out, err := runAsAgent(context.Background(), t, c, "a-other", wsB,
		`for i in 1 2 3 4 5 6 7 8 9 10 11 12; do true & done; wait && echo forked`, time.Minute)
	if err != nil || !strings.Contains(out, "forked\n") {
		t.Errorf("the other agent could not fork while the first one's processes filled its limit: %v\n%s", err, out)
	}

	cancel()
	r := <-bombed
	if !strings.Contains(r.out, "forks failed: the agent's processes reached their limit of 32 ([shell] procs)") {
		t.Errorf("the first agent's result does not say its forks hit its limit (err %v):\n%s", r.err, r.out)
	}
	waitGone(t, "time.sleep(6017)")
}

// Three processes of one command that together want more memory than the agent's limit
// are stopped, and the result says why: the limit bounds them together, not each one.
func TestAgentMemoryLimitBoundsProcessesTogether(t *testing.T) {
	bwrap := bwrapHere(t)
	python, err := lookProgram("", "python3")
	if err != nil {
		t.Skip("python3 is not installed")
	}
	l := Limits{Memory: 2 << 30}
	c := mustShell(t, Options{Sandbox: SandboxBwrap, Bwrap: bwrap, Limits: l, Boxes: boxesHere(t, l, "memory")})
	ws := workspace(t)
	// ~1 GB each, written so that every page is really used; then they hold it.
	grab := python + ` -c "import time; b = b'x' * 10**9; time.sleep(120)"`
	out, err := runAsAgent(context.Background(), t, c, "a-hungry", ws,
		"for i in 1 2 3; do "+grab+" & done; wait; echo all-survived", 2*time.Minute)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if strings.Contains(out, "all-survived") || !strings.Contains(out, "out of memory") || !strings.Contains(out, "memory limit of 2 GiB") {
		t.Errorf("3 GB over three processes under a 2 GiB limit: want the command stopped and the result saying so, got:\n%s", out)
	}
	t.Logf("%s", out)
	waitGone(t, "time.sleep(120)")
}

// Two agents kept busy get about the same CPU time, however many processes each runs:
// each agent's box has an equal share.
func TestBusyAgentsShareTheCPU(t *testing.T) {
	bwrap := bwrapHere(t)
	c := mustShell(t, Options{Sandbox: SandboxBwrap, Bwrap: bwrap, Boxes: boxesHere(t, Limits{}, "cpu")})
	// The first agent runs 8 busy processes, the second 2, all on the first CPU (spread
	// over several, a group's share is split by where its processes happen to run). Each
	// process is in a session of its own: the kernel's autogroups would otherwise share
	// the CPU by session, which a program can start as many of as it likes.
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	marker := func(i int) string { return "busy-agent-" + strconv.Itoa(i) + "-" + strconv.Itoa(os.Getpid()) }
	wss, outs := []string{workspace(t), workspace(t)}, make([]string, 2)
	for i, n := range []int{8, 2} {
		wg.Go(func() {
			line := "for i in $(seq " + strconv.Itoa(n) + "); do taskset -c 0 setsid -w sh -c 'while :; do :; done' " + marker(i) + " & done; echo > started; wait"
			out, err := runAsAgent(ctx, t, c, "a-busy"+strconv.Itoa(i), wss[i], line, 2*time.Minute)
			outs[i] = fmt.Sprint(out, err)
		})
	}
	for i, ws := range wss {
		if !testutil.Wait(time.Minute, func() bool {
			_, err := os.Stat(filepath.Join(ws, "started"))
			return err == nil
		}) {
			cancel()
			wg.Wait()
			t.Fatalf("agent %d never started its busy processes: %q", i, outs)
		}
	}
	// The CPU time each agent's processes get while both together get a second of it.
	before := []float64{cpuOf(marker(0)), cpuOf(marker(1))}
	var many, few float64
	if !testutil.Wait(time.Minute, func() bool {
		many, few = cpuOf(marker(0))-before[0], cpuOf(marker(1))-before[1]
		return many+few >= 1
	}) {
		t.Fatalf("the busy agents got %.2fs and %.2fs of CPU in a minute", many, few)
	}
	cancel()
	// Shared by process, the 2 would get a quarter of what the 8 get.
	if few/many < 0.6 {
		t.Errorf("an agent with 2 busy processes got %.2fs of CPU beside one with 8 that got %.2fs: want about the same", few, many)
	}
	t.Logf("CPU seconds: 8 processes %.2f, 2 processes %.2f", many, few)
	waitGone(t, marker(0))
	waitGone(t, marker(1))
}

// cpuOf is the CPU time, in seconds, of the processes with marker in their command line.
func cpuOf(marker string) float64 {
	var ticks int64
	for _, pid := range testutil.ProcessesWith(marker) {
		stat, err := os.ReadFile("/proc/" + pid + "/stat")
		if err != nil {
			continue
		}
		f := strings.Fields(string(stat[strings.LastIndex(string(stat), ")")+2:]))
		utime, _ := strconv.ParseInt(f[11], 10, 64) // fields 14 and 15 of stat, counted after the name
		stime, _ := strconv.ParseInt(f[12], 10, 64)
		ticks += utime + stime
	}
	return float64(ticks) / 100 // USER_HZ
}

// git, which clone_repository runs unsandboxed, runs in the agent's box too: its
// processes count against the agent's limit (here two, fewer than a clone needs at once,
// so it fails, saying so).
func TestCloneRunsInTheAgentsBox(t *testing.T) {
	base, _, _ := gitServer(t)
	boxes := boxesHere(t, Limits{Procs: 2}, "pids")
	c := newClone(t, Options{AllowPrivateNetworks: true, Boxes: boxes})
	_, err := run(context.Background(), t, c, workspace(t), cloneArgs(base+"/repo.git", "r"), time.Minute)
	if err == nil || !strings.Contains(err.Error(), "the agent's processes reached their limit of 2") {
		t.Errorf("clone in a box of one process: %v; want it refused by the box's limit", err)
	}
	if _, err := run(context.Background(), t, newClone(t, Options{AllowPrivateNetworks: true}), workspace(t), cloneArgs(base+"/repo.git", "r"), time.Minute); err != nil {
		t.Errorf("the same clone without the box: %v", err)
	}
}

// Unsandboxed (sandbox "none"), a program that left the command's session would outlive
// it; in the agent's box it is killed with the command all the same.
func TestLeftoversOfAnUnsandboxedCommandDieWithIt(t *testing.T) {
	c := mustShell(t, Options{Sandbox: SandboxNone, Boxes: boxesHere(t, Limits{}, "pids")})
	out, err := runAsAgent(context.Background(), t, c, "a-setsid", workspace(t), `setsid sh -c '> escaped; exec sleep 6019' > /dev/null 2>&1 < /dev/null & while [ ! -e escaped ]; do :; done; echo started`, time.Minute)
	if err != nil || !strings.Contains(out, "started") {
		t.Fatalf("%v\n%s", err, out)
	}
	waitGone(t, "sleep 6019")
}
