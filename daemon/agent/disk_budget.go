package agent

import (
	"fmt"
	"time"

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

// previewRoom is the disk a's effect preview may take, its copy of the workspace and its
// store (effect.Previews.Run): what a's disk budget leaves beside its workspace, so an
// agent cannot double its disk by having its commands run ahead; 0 when a has no disk
// budget (the preview's own bound holds).
func (s *budgets) previewRoom(a *store.Agent) int64 {
	budget := s.agentBudget(a).MaxDisk
	if budget <= 0 {
		return 0
	}
	return max(budget-a.DiskBytes, 1) // none left: no preview
}

// diskAfter measures a's workspace after a command of class ran, when a has a disk
// budget and the command may have written; -1 when nothing was measured (see cheapWalk).
func (s *budgets) diskAfter(a *store.Agent, class commands.Class) int64 {
	budget := s.agentBudget(a).MaxDisk
	if budget <= 0 || class == commands.ClassRead || class == commands.ClassMessage {
		return -1
	}
	used, ok := commands.FSUsed(a.Workspace)
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

// watchDisk bounds a command that runs long by a's disk budget (commands.WatchDisk every
// diskWatchEvery on its workspace), and cuts the command (cancel) once the workspace is
// over it. stop ends the watch and says why the command was cut, or "".
func (s *budgets) watchDisk(a *store.Agent, cancel func()) (stop func() string) {
	budget := s.agentBudget(a).MaxDisk
	if budget <= 0 {
		return func() string { return "" }
	}
	var why string // set before the watch ends
	end := commands.WatchDisk(a.Workspace, budget, a.DiskBytes, diskWatchEvery,
		func() (int64, error) { return commands.DiskUsage(a.Workspace) },
		func(n int64) {
			why = fmt.Sprintf("its workspace grew to %s while it ran, over its disk budget of %s", display.Size(n), display.Size(budget))
			cancel()
		})
	return func() string {
		end()
		return why
	}
}
