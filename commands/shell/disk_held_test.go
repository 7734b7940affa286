package shell

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/internal/testutil"
)

// A sandboxed command that deletes a file and keeps writing it through its descriptor
// takes the workspace's disk where no walk finds it: the disk watch counts what the
// command's programs hold (commands.Programs, which the sandbox run joins) and cuts it.
func TestDiskWatchCutsASandboxedCommandWritingAFileItDeleted(t *testing.T) {
	testutil.AsRootAndNot(t, func(t *testing.T) {
		c := mustShell(t, Options{Sandbox: SandboxBwrap, Bwrap: bwrapHere(t)})
		ws := workspace(t)
		measured, err := commands.DiskUsage(ws)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		progs := &commands.Programs{}
		cut := make(chan error, 1)
		stop := commands.WatchDisk(ws, measured+32<<20, measured, commands.DiskFloor, 20*time.Millisecond, func() (int64, error) { return progs.DiskUsage(ws) },
			func(_ int64, err error) { cut <- err; cancel() })
		defer stop()
		out, _ := run(commands.WithPrograms(ctx, progs), t, c, ws,
			shellLine(`exec 3>h; rm h; i=0; while [ $i -lt 20 ]; do head -c 8388608 /dev/zero >&3; sync; sleep 0.1; i=$((i+1)); done; echo wrote 160MiB`), time.Minute)
		select {
		case err := <-cut:
			if err != nil {
				t.Fatalf("cut because the measure failed (%v), want over the budget", err)
			}
		default:
			t.Fatalf("a sandboxed command wrote 160 MiB into a file it deleted, past a 32 MiB budget, and was never cut (output %q)", out)
		}
		if strings.Contains(out, "wrote 160MiB") {
			t.Fatalf("the command ran to its end after the cut: %q", out)
		}
	})
}

// The disk watch counts the programs in the sandbox's pid namespace: a program cannot make
// another one (or enter one), where what it holds would go uncounted.
func TestSandboxedProgramCannotLeaveItsPidNamespace(t *testing.T) {
	testutil.AsRootAndNot(t, func(t *testing.T) {
		c := mustShell(t, Options{Sandbox: SandboxBwrap, Bwrap: bwrapHere(t)})
		out := mustRun(t, c, workspace(t), `command -v unshare nsenter >/dev/null && echo tools-here; unshare -p -f sh -c 'echo in-a-new-namespace' 2>/dev/null; nsenter -t 1 -p sh -c 'echo entered' 2>/dev/null; echo done`, time.Minute)
		checkResult(t, out, "", []string{"tools-here", "done"}, []string{"in-a-new-namespace", "entered"})
	})
}
