package agent

import (
	"fmt"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/daemon/store"
	"github.com/agentd/agentd/internal/display"
)

// The disk budget bounds what an agent's workspace takes on disk (its helpers', inside
// it, included): commands.DiskUsage, measured after each command that may write and
// stored with its result (client.Agent.DiskBytes). An agent over it pauses before its
// next step, like any agent budget; a command that takes the workspace over it while
// it runs is cut (watchDisk). Freeing space and resuming, or raising the budget, lets
// the agent go on: the usage is measured again first.

// diskWatchEvery is how often a running command's file system is looked at.
const diskWatchEvery = time.Second

// A workspace whose walk costs more than cheapWalk (tens of thousands of files) is walked
// again after a command only when its file system grew by more than the budget leaves,
// or diskRewalk after the last walk: the file system's growth bounds what the command
// wrote, unless another writer freed space meanwhile, which the next walk finds.
const (
	cheapWalk  = 5 * time.Millisecond
	diskRewalk = 30 * time.Second
)

// diskAfter measures a's workspace after a command of class ran, when a has a disk
// budget and the command may have written; -1 when nothing was measured (see cheapWalk).
func (s *agentBudgets) diskAfter(a *store.Agent, class commands.Class) int64 {
	budget := s.agentBudget(a).MaxDisk
	if budget <= 0 || class == commands.ClassRead || class == commands.ClassMessage {
		return -1
	}
	used, ok := fsUsed(a.Workspace)
	if last, seen := s.walks.get(a.ID); ok && seen && last.took > cheapWalk &&
		time.Since(last.at) < diskRewalk && used-last.fsUsed <= budget-a.DiskBytes {
		return -1
	}
	start := time.Now()
	n, err := commands.DiskUsage(a.Workspace)
	if err != nil {
		return -1
	}
	s.walks.set(a.ID, diskWalk{at: start, fsUsed: used, took: time.Since(start)})
	return n
}

// watchDisk bounds a command that runs long by a's disk budget. Every diskWatchEvery it
// looks at the workspace's file system (statfs: one call); once that grew by more than
// the budget leaves since the last measurement, it measures the workspace, and cuts the
// command (cancel) when that is over the budget. stop ends the watch and says why the
// command was cut, or "".
func (s *agentBudgets) watchDisk(a *store.Agent, cancel func()) (stop func() string) {
	budget := s.agentBudget(a).MaxDisk
	if budget <= 0 {
		return func() string { return "" }
	}
	ws := a.Workspace
	base, known := fsUsed(ws)
	measured := a.DiskBytes
	done, exited := make(chan struct{}), make(chan struct{})
	var why string // set before exited closes
	go func() {
		defer close(exited)
		t := time.NewTicker(diskWatchEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			used, ok := fsUsed(ws)
			if !ok || !known || used-base <= budget-measured {
				continue
			}
			n, err := commands.DiskUsage(ws)
			if err != nil {
				continue
			}
			if n > budget {
				why = fmt.Sprintf("its workspace grew to %s while it ran, over its disk budget of %s", display.Size(n), display.Size(budget))
				cancel()
				return
			}
			base, measured = used, n // others wrote there: look again after as much growth
		}
	}()
	return func() string {
		close(done)
		<-exited
		return why
	}
}

// fsUsed is what the file system holding dir has in use, in bytes, each inode in use
// counting commands.MinEntryBytes as DiskUsage counts it.
func fsUsed(dir string) (int64, bool) {
	var st unix.Statfs_t
	if unix.Statfs(dir, &st) != nil {
		return 0, false
	}
	blocks := int64(st.Blocks-st.Bfree) * int64(st.Bsize)
	return blocks + int64(st.Files-st.Ffree)*commands.MinEntryBytes, true
}
