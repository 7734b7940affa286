package shell

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/internal/testutil"
)

// watchDisk starts the disk watch on ws with room bytes past what ws holds now and
// floor, counting what the programs of a command run with the context it returns hold.
// A cut cancels that context and sends the watch's error on cut.
func watchDisk(t *testing.T, ws string, room, floor int64) (ctx context.Context, cut <-chan error) {
	t.Helper()
	measured, err := commands.DiskUsage(ws)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	progs := &commands.Programs{}
	cuts := make(chan error, 1)
	stop := commands.WatchDisk(ws, measured+room, floor, 20*time.Millisecond, func() (int64, error) { return progs.DiskUsage(ws) }, progs.Parks,
		func(_ int64, err error) { cuts <- err; cancel() })
	t.Cleanup(stop)
	return commands.WithPrograms(ctx, progs), cuts
}

// A sandboxed command that deletes a file and keeps writing it through its descriptor
// takes the workspace's disk where no walk finds it: the disk watch counts what the
// command's programs hold (commands.Programs, which the sandbox run joins) and cuts it.
func TestDiskWatchCutsASandboxedCommandWritingAFileItDeleted(t *testing.T) {
	testutil.AsRootAndNot(t, func(t *testing.T) {
		c := mustShell(t, Options{Sandbox: SandboxBwrap, Bwrap: bwrapHere(t)})
		ws := workspace(t)
		ctx, cut := watchDisk(t, ws, 32<<20, commands.DiskFloor)
		out, _ := run(ctx, t, c, ws,
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

// A sandboxed command that hands files it deleted to programs it may not read (so that a
// daemon that is not root may not read even their pid namespace) holds 128 MiB where its
// budget is 96: the watch cuts it, counting them (root) or failing to, never taking those
// programs for none of the command's.
func TestDiskWatchCutsACommandHoldingDeletedFilesInProgramsItMayNotRead(t *testing.T) {
	sleep := testutil.ExecOnlyProgram(t, "/bin/sleep")
	testutil.AsRootAndNot(t, func(t *testing.T) {
		c := mustShell(t, Options{Sandbox: SandboxBwrap, Bwrap: bwrapHere(t), ReadOnlyPaths: []string{filepath.Dir(sleep)}})
		ws := workspace(t)
		ctx, cut := watchDisk(t, ws, 96<<20, 0)
		hand := `exec 3>h; head -c 67108864 /dev/zero >&3; rm h; ` + sleep + ` 60 & exec 3>&-; `
		out, _ := run(ctx, t, c, ws, shellLine(hand+hand+`sleep 3; echo held 128MiB`), time.Minute)
		select {
		case <-cut:
		default:
			t.Fatalf("a sandboxed command held 128 MiB in files it deleted, past a 96 MiB budget, and was never cut (output %q)", out)
		}
	})
}

// A look of the disk watch lands at any moment of a command: while bwrap sets the sandbox
// up, while its programs start and end, while it ends. An innocent command is never cut
// for it: a program on its way out (its /proc files are root's once it let go of its
// memory, until it is a zombie) holds nothing, and is not taken for one that cannot be read.
func TestDiskWatchLooksNeverFailOnAnInnocentCommandWhoseProgramsStartAndEnd(t *testing.T) {
	testutil.AsRootAndNot(t, func(t *testing.T) {
		c := mustShell(t, Options{Sandbox: SandboxBwrap, Bwrap: bwrapHere(t)})
		ws := workspace(t)
		for i := range 20 {
			progs := &commands.Programs{}
			done, failed := make(chan struct{}), make(chan error, 1)
			go func() {
				defer close(failed)
				for looks := 0; ; looks++ {
					select {
					case <-done:
						return
					default:
					}
					if _, err := progs.DiskUsage(ws); err != nil {
						failed <- fmt.Errorf("look %d: %w", looks, err)
						return
					}
				}
			}()
			_, err := run(commands.WithPrograms(context.Background(), progs), t, c, ws, shellLine(`true; ls >/dev/null; echo x`), time.Minute)
			close(done)
			if lookErr := <-failed; lookErr != nil || err != nil {
				t.Fatalf("command %d (error %v): a look of an innocent command failed: %v", i, err, lookErr)
			}
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
