package effect

import (
	"os"
	"strings"
	"testing"

	"github.com/agentd/agentd/commands/shell"
	"github.com/agentd/agentd/internal/testutil"
)

// A run ahead (model output alone: no person approved anything) that deletes a file in
// its copy and keeps writing it is stopped at its room: as root by its quota, and by a
// daemon that is not root and may not mount, which has the watch alone, because the
// watch counts what the run's programs hold with no name.
func TestRunAheadWritingAFileItDeletedIsStoppedAtItsRoom(t *testing.T) {
	testutil.AsRootAndNot(t, func(t *testing.T) {
		watchAloneUnlessRoot(t)
		f := newFixture(t, shell.Options{})
		f.room = 16 << 20
		eff, out := f.run(t, `exec 3>h; rm h; i=0; while [ $i -lt 20 ]; do head -c 8388608 /dev/zero >&3 || exit 1; sync; sleep 0.1; i=$((i+1)); done; echo WROTE-ALL-160MiB`)
		// Under the quota its ENOSPC may end the run before the watch looks: its writes fail.
		stopped := mayMount || strings.Contains(eff.None, "wrote past")
		if strings.Contains(eff.Output+out, "WROTE-ALL-160MiB") || !stopped {
			t.Fatalf("a run ahead wrote 160 MiB into a file it deleted, past its 16 MiB room: preview %q, output %q", eff.None, eff.Output+out)
		}
	})
}

// A run ahead whose program makes itself not dumpable (prctl PR_SET_DUMPABLE 0), so that a
// daemon that is not root may not read what it holds, and then holds a deleted file past
// its room is stopped, not missed: the measure that cannot read it fails, and a failed
// measure stops the run.
func TestRunAheadThatMakesItselfUnreadableWhileHoldingADeletedFileIsStopped(t *testing.T) {
	testutil.AsRootAndNot(t, func(t *testing.T) {
		watchAloneUnlessRoot(t)
		f := newFixture(t, shell.Options{})
		f.room = 16 << 20
		eff, out := f.run(t, `python3 -c 'import os,time,ctypes; ctypes.CDLL(None).prctl(4,0,0,0,0); fd=os.open("h",os.O_CREAT|os.O_WRONLY,0o600); os.unlink("h"); os.posix_fallocate(fd,0,160<<20); time.sleep(3); print("HELD-160MiB")'`)
		// The quota refuses the 160 MiB: the program fails before it prints.
		stopped := mayMount || eff.None != ""
		if strings.Contains(eff.Output+out, "HELD-160MiB") || !stopped {
			t.Fatalf("a run ahead that made itself unreadable held 160 MiB in a file it deleted, past its 16 MiB room: preview %q, output %q", eff.None, eff.Output+out)
		}
	})
}

// A run ahead that allocates 160 MiB to a file it deleted and keeps its only descriptor
// in a socket's queue (SCM_RIGHTS), where no /proc listing names it, is stopped and its
// preview does not stand: as root its quota refuses the allocation; a daemon that is not
// root and may not mount charges it the file system's growth no measure explains.
func TestRunAheadParkingAFileItDeletedInASocketIsStopped(t *testing.T) {
	testutil.AsRootAndNot(t, func(t *testing.T) {
		watchAloneUnlessRoot(t)
		f := newFixture(t, shell.Options{})
		f.room = 16 << 20
		eff, out := f.run(t, `python3 -c 'import os,socket,time; a,b=socket.socketpair(); fd=os.open("h",os.O_CREAT|os.O_WRONLY,0o600); os.unlink("h"); os.posix_fallocate(fd,0,160<<20); socket.send_fds(a,[b"x"],[fd]); os.close(fd); time.sleep(3); print("HELD-160MiB")'`)
		if strings.Contains(eff.Output+out, "HELD-160MiB") && eff.None == "" {
			t.Fatalf("a run ahead held 160 MiB in a file it deleted, past its 16 MiB room, and its preview stands: output %q", eff.Output+out)
		}
		if !mayMount && !strings.Contains(eff.None, "no measure explains") {
			t.Fatalf("preview %q; want it stopped for the growth no measure explains", eff.None)
		}
	})
}

// watchAloneUnlessRoot makes a daemon that is not root one that may not mount either (no
// user namespaces, as in many containers): a run ahead on a copy, with the watch alone
// to bound it. Its quota in a namespace of its own is root's, tested as root's is.
func watchAloneUnlessRoot(t *testing.T) {
	if os.Geteuid() == 0 {
		return
	}
	was := mayMount
	mayMount = false
	t.Cleanup(func() { mayMount = was })
}
