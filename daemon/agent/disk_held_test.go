package agent

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/commands/shell"
	"github.com/agentd/agentd/daemon/config"
	"github.com/agentd/agentd/internal/testutil"
)

// A sandboxed command that deletes a file and keeps writing it takes the workspace's disk
// where no walk finds it; it is cut at the agent's disk budget all the same, as root and
// as a daemon that is not root, and its result says why.
func TestCommandWritingAFileItDeletedIsCutAtTheDiskBudget(t *testing.T) {
	// 8 MiB every tenth of a second for 160 MiB, held 15 s more (the watch measures every
	// tenth look whatever statfs says, which others writing and freeing meanwhile blur),
	// unless it is cut.
	cutAtTwoMiB(t, false, `exec 3>h; rm h; i=0; while [ $i -lt 20 ]; do head -c 8388608 /dev/zero >&3; sync; sleep 0.1; i=$((i+1)); done; sleep 15; echo finished`,
		"cut off: its workspace grew to")
}

// A sandboxed command that allocates 160 MiB to a file it deleted and keeps the file's
// only descriptor in a socket's queue (SCM_RIGHTS), where no /proc listing names it,
// hides it from every measure; the file system's growth that nothing explains is
// charged to it, so it is cut at the agent's disk budget all the same, as root and as a
// daemon that is not root, and its result says why.
func TestCommandParkingAFileItDeletedInASocketIsCutAtTheDiskBudget(t *testing.T) {
	cutAtTwoMiB(t, true, `python3 -c 'import os,socket,time; a,b=socket.socketpair(); fd=os.open("h",os.O_CREAT|os.O_WRONLY,0o600); os.unlink("h"); os.posix_fallocate(fd,0,160<<20); socket.send_fds(a,[b"x"],[fd]); os.close(fd); time.sleep(15); print("finished")'`,
		"that nothing agentd measures explains, over its disk budget of 2 MiB")
}

// cutAtTwoMiB runs line, approved, in an agent with a disk budget of 2 MiB (and effect
// previews off when noPreview), as root and as a daemon that is not root, and wants its
// result to say want, the command cut before it printed "finished".
func cutAtTwoMiB(t *testing.T, noPreview bool, line, want string) {
	testutil.AsRootAndNot(t, func(t *testing.T) {
		sh := realShellWith(t, shell.Options{})
		h := newHarness(t, func(o *Options) {
			o.Components = append(o.Components, commands.CommandList{ID: "shell", Cmds: commands.Set{sh}})
			o.MaxDisk = config.Size(2 << 20)
			o.EffectPreview = !noPreview
		})
		h.fake.Script(shellReply(line))
		listForever(h)
		a := autoAgent(h, 10)
		h.approve(a.ID, "execute_shell")
		if ran := shellResult(t, h, a); !strings.Contains(ran.Result, want) || strings.Contains(ran.Result, "finished") {
			t.Fatalf("result %q; want the command cut at the disk budget, saying why", ran.Result)
		}
	})
}

// shellResult waits for the episode of a's first shell command.
func shellResult(t *testing.T, h *harness, a *api.Agent) *api.Episode {
	t.Helper()
	var ran *api.Episode
	testutil.Eventually(t, time.Minute, a.Name+"'s command's result", func() bool {
		for _, ep := range h.history(a.ID) {
			if ep.Command == "execute_shell" {
				ran = &ep
			}
		}
		return ran != nil
	})
	return ran
}

// Two agents writing on one file system at once, each within its disk budget, are not
// cut for each other's bytes: the one that ends first has its step checkpointed while
// the other runs, and neither its write (its own watch's measure explains it) nor its
// checkpoint (the store says what it took) is charged to the other.
func TestTwoAgentsWritingWithinTheirDiskBudgetsAtOnceAreNotCut(t *testing.T) {
	sh := realShellWith(t, shell.Options{})
	h := newHarness(t, withCheckpoints, func(o *Options) {
		o.Components = append(o.Components, commands.CommandList{ID: "shell", Cmds: commands.Set{sh}})
		o.MaxDisk = config.Size(64 << 20)
		o.EffectPreview = false
	})
	// 48 MiB each, of a 64 MiB budget: what the other wrote and checkpointed is 96 MiB.
	write := `head -c 50331648 /dev/urandom > f && sync && sleep %d && echo wrote`
	h.fake.Script(shellReply(fmt.Sprintf(write, 3)), shellReply(fmt.Sprintf(write, 10)))
	listForever(h)
	var agents []*api.Agent
	for _, name := range []string{"one", "two"} {
		agents = append(agents, h.create(api.CreateAgentRequest{Name: name, Description: "a test agent", Goals: []string{"write"},
			Policy: &api.Policy{Mode: "auto", AutoSteps: 10}}))
	}
	for _, a := range agents {
		h.approve(a.ID, "execute_shell")
	}
	for _, a := range agents {
		if ran := shellResult(t, h, a); !strings.Contains(ran.Result, "wrote") || strings.Contains(ran.Result, "cut off") {
			t.Errorf("%s's result %q; want it to run to its end, within its budget", a.Name, ran.Result)
		}
	}
}

// An honest agent with a disk budget (16 MiB) runs a command
// that writes nothing (sleep 6); meanwhile another agent of the same daemon, one with no
// disk budget (the default), writes 96 MiB in its own workspace. That agent runs no disk
// watch (budgets.go watchDisk: budget <= 0), so no measure ever explains its bytes, and
// the ledger charges them to the honest command, which is cut: a denial of service any
// agent without a budget (or the daemon's own restore of a rewind) does to every agent
// with one, on one file system.
func TestAnAgentIsNotCutForAnotherAgentWithNoDiskBudgetWriting(t *testing.T) {
	h := newHarness(t, withShell(t), func(o *Options) { o.EffectPreview = false })
	h.fake.Script(shellReply(`sleep 6 && echo slept`), shellReply(`head -c 100663296 /dev/zero > big && sync && echo wrote`))
	listForever(h)
	no := false
	ctx := context.Background()
	small := h.create(api.CreateAgentRequest{Name: "small", Description: "a test agent", Goals: []string{"wait"}, Start: &no})
	big := h.create(api.CreateAgentRequest{Name: "big", Description: "a test agent", Goals: []string{"write"}, Start: &no})
	sixteen := int64(16 << 20)
	if _, err := h.sup.budgets.SetBudget(ctx, small.ID, api.BudgetRequest{MaxDisk: &sixteen}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.sup.runs.Task(ctx, small.Name, "wait"); err != nil {
		t.Fatal(err)
	}
	p1 := h.pending(small.ID)
	if _, err := h.sup.runs.Task(ctx, big.Name, "write"); err != nil {
		t.Fatal(err)
	}
	p2 := h.pending(big.ID)
	if _, err := h.decide(small.ID, p1, "y"); err != nil {
		t.Fatal(err)
	}
	h.waitFor(small.ID, "small executing", func(a *api.Agent) bool { return a.State == api.StateExecuting })
	time.Sleep(1500 * time.Millisecond) // its watch has looked once
	if _, err := h.decide(big.ID, p2, "y"); err != nil {
		t.Fatal(err)
	}
	for _, a := range []*api.Agent{big, small} {
		var ran *api.Episode
		testutil.Eventually(t, time.Minute, a.Name+"'s result", func() bool {
			for _, ep := range h.history(a.ID) {
				if ep.Command == "execute_shell" {
					ran = &ep
				}
			}
			return ran != nil
		})
		t.Logf("%s: %s", a.Name, ran.Result)
		if a == small && (strings.Contains(ran.Result, "cut off") || !strings.Contains(ran.Result, "slept")) {
			t.Errorf("small (16 MiB budget, wrote nothing) was cut for big's writes: %q", ran.Result)
		}
	}
}

// Bytes held and freed are no credit, with two agents: b (1 GiB budget) allocates 150 MiB to
// a file it deleted and holds it 12 s: its watch's measure (or the refresh a's watch
// asks for) explains it, then b's command ends and the kernel frees it, with no measure
// after. The ledger keeps it explained ("its files stay where they are"), so a (16 MiB
// budget), whose command began before, gets 150 MiB of credit: it parks 150 MiB in a
// socket's queue, where no listing names it, and is never cut. Each such command of b
// adds as much again. Run it with TMPDIR on a file system of its own (as root: mount -t
// tmpfs -o size=1500m tmpfs /tmp/a10fs; TMPDIR=/tmp/a10fs go test ...): on a disk others
// write meanwhile, their bytes are charged to small too (the false cut above).
func TestBytesAnotherAgentHeldAndFreedAreNoCreditForParking(t *testing.T) {
	sh := realShellWith(t, shell.Options{})
	h := newHarness(t, func(o *Options) {
		o.Components = append(o.Components, commands.CommandList{ID: "shell", Cmds: commands.Set{sh}})
		o.EffectPreview = false
	})
	h.fake.Script(
		shellReply(`sleep 20; python3 -c 'import os,socket,time; a,b=socket.socketpair(); fd=os.open("p",os.O_CREAT|os.O_WRONLY,0o600); os.unlink("p"); os.posix_fallocate(fd,0,150<<20); socket.send_fds(a,[b"x"],[fd]); os.close(fd); time.sleep(8); print("finished, parked 150 MiB")'`),
		shellReply(`python3 -c 'import os,time; fd=os.open("h",os.O_CREAT|os.O_WRONLY,0o600); os.unlink("h"); os.posix_fallocate(fd,0,150<<20); time.sleep(12); print("held")'`))
	listForever(h)
	no := false
	ctx := context.Background()
	small := h.create(api.CreateAgentRequest{Name: "small", Description: "a test agent", Goals: []string{"park"}, Start: &no})
	big := h.create(api.CreateAgentRequest{Name: "big", Description: "a test agent", Goals: []string{"hold"}, Start: &no})
	sixteen, gib := int64(16<<20), int64(1<<30)
	for _, x := range []struct {
		a *api.Agent
		n *int64
	}{{small, &sixteen}, {big, &gib}} {
		if _, err := h.sup.budgets.SetBudget(ctx, x.a.ID, api.BudgetRequest{MaxDisk: x.n}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := h.sup.runs.Task(ctx, small.Name, "park"); err != nil {
		t.Fatal(err)
	}
	p1 := h.pending(small.ID)
	if _, err := h.sup.runs.Task(ctx, big.Name, "hold"); err != nil {
		t.Fatal(err)
	}
	p2 := h.pending(big.ID)
	if _, err := h.decide(small.ID, p1, "y"); err != nil {
		t.Fatal(err)
	}
	h.waitFor(small.ID, "small executing", func(a *api.Agent) bool { return a.State == api.StateExecuting })
	if _, err := h.decide(big.ID, p2, "y"); err != nil {
		t.Fatal(err)
	}
	for _, a := range []*api.Agent{big, small} {
		var ran *api.Episode
		testutil.Eventually(t, 2*time.Minute, a.Name+"'s result", func() bool {
			for _, ep := range h.history(a.ID) {
				if ep.Command == "execute_shell" {
					ran = &ep
				}
			}
			return ran != nil
		})
		t.Logf("%s: %s", a.Name, ran.Result)
		if a == small && strings.Contains(ran.Result, "finished") {
			t.Errorf("small (16 MiB budget) held 150 MiB no listing names to its end, never cut: %q", ran.Result)
		}
	}
}
