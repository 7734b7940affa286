package memory

import (
	"context"
	"fmt"
	"time"

	"github.com/blevesearch/bleve/v2/index/scorch"
)

// Settle waits until the live index's background work — persisting the batches written
// and the segment merges that follow — has been quiet for quiet, or ctx ends. A bulk load
// (a rebuild, or tests seeding many memories) leaves seconds of merging behind; Settle lets
// a benchmark measure the steady index a long-running daemon has, not that burst.
func (ix *Index) Settle(ctx context.Context, quiet time.Duration) error {
	ix.mu.RLock()
	if ix.closed {
		ix.mu.RUnlock()
		return ErrClosed
	}
	g := ix.cur
	ix.mu.RUnlock()
	adv, err := g.idx.Advanced()
	if err != nil {
		return fmt.Errorf("memory: settle: %w", err)
	}
	s, ok := adv.(*scorch.Scorch)
	if !ok {
		return nil
	}
	work := func() [4]any {
		m := s.StatsMap()
		return [4]any{m["TotPersistedSegments"], m["TotFileMergePlanTasksDone"], m["TotFileMergeSegments"], m["TotFileSegmentsAtRoot"]}
	}
	last, since := work(), time.Now()
	tick := time.NewTicker(max(quiet/10, 10*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
			if cur := work(); cur != last {
				last, since = cur, time.Now()
			} else if time.Since(since) >= quiet {
				return nil
			}
		}
	}
}
