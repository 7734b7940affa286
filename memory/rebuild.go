package memory

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
)

// swapRequest asks the writer to install a rebuilt generation.
type swapRequest struct {
	g           *generation
	tee         []op   // operations queued while the rebuild ran, to replay into g
	teeLosses   uint64 // losses the rebuild covered
	startLosses uint64
	done        chan error
}

// Rebuild builds a fresh index from source — every memory in the store, each yielded once
// (yield returns an error when the rebuild is canceled; source should return it) — into a new
// generation directory, then swaps it in: CURRENT is replaced atomically and the old
// generation deleted. Searches and Adds keep working on the old generation meanwhile;
// memories added or deleted during the rebuild are replayed into the new one before the
// swap, so none is lost even if source read the store before they were written. Vectors of
// memories whose text did not change are copied, not embedded again.
//
// One rebuild runs at a time (ErrRebuildRunning otherwise). On success NeedsRebuild turns
// false unless memories were lost since the rebuild started. On error the live index is
// unchanged. Close cancels a running rebuild.
func (ix *Index) Rebuild(ctx context.Context, source func(yield func(Doc) error) error) error {
	if !ix.rebuildMu.TryLock() {
		return ErrRebuildRunning
	}
	defer ix.rebuildMu.Unlock()
	if ix.rebuildCtx.Err() != nil {
		return ErrClosed
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(ix.rebuildCtx, cancel)
	defer stop()

	name, err := nextGenName(ix.dir)
	if err != nil {
		return fmt.Errorf("memory: rebuild: %w", err)
	}
	g, err := createGeneration(ix.dir, name)
	if err != nil {
		return fmt.Errorf("memory: rebuild: %w", err)
	}
	startLosses := ix.startTee()
	if err := ix.fill(ctx, g, source); err != nil {
		ix.stopTee()
		discard(g)
		return fmt.Errorf("memory: rebuild: %w", err)
	}
	req := &swapRequest{g: g, startLosses: startLosses, done: make(chan error, 1)}
	if err := ix.enqueueSwap(req); err != nil {
		discard(g)
		return fmt.Errorf("memory: rebuild: %w", err)
	}
	// The writer owns g now and always answers, even while closing.
	if err := <-req.done; err != nil {
		return fmt.Errorf("memory: rebuild: %w", err)
	}
	ix.log.Info("memory: index rebuilt", "generation", name, "memories", g.docCount())
	return nil
}

// fill writes every memory source yields into g. Batches are written by fillWorkers
// goroutines while source reads on: Bleve builds a segment on one core, so two batches in
// flight keep two cores busy. (Batches may land out of order; source yields each id once.)
func (ix *Index) fill(ctx context.Context, g *generation, source func(yield func(Doc) error) error) error {
	old := ix.live()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	batches := make(chan []op)
	var wg sync.WaitGroup
	for range fillWorkers {
		wg.Go(func() {
			for b := range batches {
				if err := ix.writeOps(g, b, old); err != nil {
					cancel(err)
				}
			}
		})
	}
	batch := make([]op, 0, ix.opts.BatchSize)
	send := func() error {
		select {
		case batches <- batch:
			batch = make([]op, 0, ix.opts.BatchSize)
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	yield := func(d Doc) error {
		if err := ctx.Err(); err != nil {
			return context.Cause(ctx)
		}
		d, err := clean(d, ix.opts.MaxTextBytes)
		if err != nil { // one bad row must not stop the rebuild
			ix.log.Warn("memory: rebuild: skipping a memory", "err", err)
			return nil
		}
		batch = append(batch, op{kind: opAdd, doc: d, dates: dateTerms(d.Text, d.Created)})
		if len(batch) >= ix.opts.BatchSize {
			return send()
		}
		return nil
	}
	err := source(yield)
	if err == nil && len(batch) > 0 {
		err = send()
	}
	close(batches)
	wg.Wait()
	if err == nil && ctx.Err() != nil {
		err = context.Cause(ctx) // a failed batch, or the caller's cancellation
	}
	return err
}

const fillWorkers = 2

// startTee makes the queue keep a copy of everything queued from now on.
func (ix *Index) startTee() (startLosses uint64) {
	ix.q.mu.Lock()
	defer ix.q.mu.Unlock()
	startLosses = ix.health.lossCount()
	ix.q.teeing, ix.q.tee, ix.q.teeLosses = true, nil, 0
	return startLosses
}

// stopTee ends a failed rebuild's watch; what it covered is now uncovered.
func (ix *Index) stopTee() {
	ix.q.mu.Lock()
	lost := ix.q.teeLosses
	ix.q.teeing, ix.q.tee, ix.q.teeLosses = false, nil, 0
	ix.q.mu.Unlock()
	if lost > 0 {
		ix.health.flag("memories were lost while a rebuild that failed was running")
	}
}

// enqueueSwap queues the swap behind everything queued so far, handing it the tee; the queue
// bound does not apply to it.
func (ix *Index) enqueueSwap(req *swapRequest) error {
	q := &ix.q
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		ix.stopTee()
		return ErrClosed
	}
	req.tee, req.teeLosses = q.tee, q.teeLosses
	q.teeing, q.tee, q.teeLosses = false, nil, 0
	q.ops = append(q.ops, op{kind: opSwap, swap: req})
	q.enqueued++
	q.mu.Unlock()
	signal(q.wake)
	return nil
}

// swap runs on the writer: replay the tee into the new generation, point CURRENT at it, then
// switch searches over and delete the old one.
func (ix *Index) swap(req *swapRequest) {
	old := ix.live()
	err := func() error {
		for start := 0; start < len(req.tee); start += ix.opts.BatchSize {
			end := min(start+ix.opts.BatchSize, len(req.tee))
			if err := ix.writeOps(req.g, req.tee[start:end], old); err != nil {
				return err
			}
		}
		if err := req.g.persist(); err != nil {
			return err
		}
		return writeFileAtomic(ix.dir, currentFile, []byte(req.g.name+"\n"))
	}()
	if err != nil {
		discard(req.g)
		if req.teeLosses > 0 {
			ix.health.flag("memories were lost while a rebuild that failed was running")
		}
		req.done <- err
		return
	}
	ix.mu.Lock() // waits for searches in flight on the old generation
	ix.cur = req.g
	ix.mu.Unlock()
	if err := errors.Join(old.close(), os.RemoveAll(old.dir)); err != nil {
		ix.log.Warn("memory: removing the replaced index", "generation", old.name, "err", err)
	}
	ix.health.clearIf(req.startLosses)
	req.done <- nil
}

// discard closes and deletes a generation that will not be used.
func discard(g *generation) {
	_ = g.close()
	_ = os.RemoveAll(g.dir)
}
