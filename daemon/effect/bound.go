package effect

import (
	"context"
	"fmt"
	"time"

	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/internal/display"
)

// boundEvery is how often the second wall looks at a run ahead's layer (one statfs).
const boundEvery = 100 * time.Millisecond

// diskBound is the disk one agent's preview may take: its copy of the workspace and its
// store together, as commands.DiskUsage counts them, at most room. The run ahead writes
// into its layer, a tmpfs of what room leaves (the first wall, by construction); what
// it wrote is then captured into the store within the same (CheckpointWithin).
type diskBound struct {
	upper string // the layer's tmpfs, as the daemon reaches it
	room  int64
	over  string // why the run ahead was stopped, or ""
}

// used is what the layer holds, counting each entry at least commands.MinEntryBytes as
// DiskUsage does (a tmpfs counts an empty file as nothing).
func (b *diskBound) used() (int64, error) {
	n, ok := commands.FSUsed(b.upper)
	if !ok {
		return 0, fmt.Errorf("the layer of the run ahead cannot be measured")
	}
	return n, nil
}

// run runs fn, the run ahead, which writes into the layer while the copy and the store
// take took: the second wall, a watch (commands.WatchDisk), stops it once the layer
// and those take more than room, counted as DiskUsage counts, and a look at its end
// finds a run that filled its layer. over says why.
func (b *diskBound) run(ctx context.Context, took int64, fn func(context.Context) (string, error)) (string, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	fs0, err := b.used()
	if err != nil {
		return "", err
	}
	measure := func() (int64, error) {
		n, err := b.used()
		return took + n - fs0, err
	}
	stop := commands.WatchDisk(b.upper, b.room, took, boundEvery, measure, func(n int64) {
		b.over = b.overBy(n, took)
		cancel()
	})
	out, err := fn(ctx)
	stop()
	if n, merr := measure(); b.over == "" && merr == nil && n > b.room {
		b.over = b.overBy(n, took)
	}
	return out, err
}

// storeRoom is what capturing the run's change may add to the store: what room leaves
// beside the copy. The capture counts a file at its full size, as the store keeps it,
// so sparse files the layer holds in a few blocks are bounded too.
func (b *diskBound) storeRoom(took int64) int64 { return b.room - took }

func (b *diskBound) overBy(n, took int64) string {
	return fmt.Sprintf("its run ahead wrote past the %s of disk its budget leaves a preview (%s with its copy of the workspace and its change, %s before it ran): it was stopped, and nothing it wrote is kept",
		display.Size(b.room), display.Size(n), display.Size(took))
}
