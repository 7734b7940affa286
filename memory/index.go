package memory

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
)

// Index is an agent memory index on disk. All methods are safe for concurrent use.
//
// Lifecycle: Open, then Add/Delete (queued, never blocking on I/O), Search, Flush when a
// caller needs its additions searchable, Rebuild when NeedsRebuild says so (or on request),
// and Close, which drains the queue.
type Index struct {
	dir  string
	opts Options
	log  *slog.Logger
	lock *os.File

	mu     sync.RWMutex // guards cur and closed; held for reading during a search
	cur    *generation
	closed bool

	q          queue
	prog       progress
	writerDone chan struct{}

	rebuildMu     sync.Mutex
	rebuildCtx    context.Context // canceled by Close
	rebuildCancel context.CancelFunc
	embedCtx      context.Context // canceled by Close: draining does not wait for the model
	embedCancel   context.CancelFunc

	health   health
	markers  sync.WaitGroup // marker-file updates in flight
	markerMu sync.Mutex

	indexed       atomic.Uint64
	dropped       atomic.Uint64
	embedFailures atomic.Uint64
	lastWarn      atomic.Int64 // unix nanos of the last embedding warning

	closeOnce sync.Once
	closeErr  error
}

// health says whether the live index is known to miss memories. losses counts the events
// that made it so; a rebuild clears the flag only if no loss happened outside its watch.
type health struct {
	mu     sync.Mutex
	needs  bool
	reason string
	losses uint64
}

// Open opens (or creates) the memory index in dir. A missing, damaged or possibly incomplete
// index is not an error: Open serves an empty (or the surviving) index, logs why, and
// NeedsRebuild reports true so the caller can Rebuild in the background while serving.
// Open fails only when dir is unusable or another process has it open.
func Open(dir string, opts Options) (*Index, error) {
	opts = opts.withDefaults()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("memory: %w", err)
	}
	lock, err := lockDir(filepath.Join(dir, lockFile))
	if err != nil {
		return nil, fmt.Errorf("memory: %s: %w", dir, err)
	}
	ix := &Index{dir: dir, opts: opts, log: opts.Logger, lock: lock, writerDone: make(chan struct{})}
	ix.q.init(opts.QueueSize)
	ix.prog.init()
	ix.rebuildCtx, ix.rebuildCancel = context.WithCancel(context.Background())
	ix.embedCtx, ix.embedCancel = context.WithCancel(context.Background())

	var reasons []string
	if b, err := os.ReadFile(filepath.Join(dir, needsRebuildFile)); err == nil {
		reasons = append(reasons, strings.TrimSpace(string(b)))
	}
	if _, err := os.Stat(filepath.Join(dir, dirtyFile)); err == nil {
		reasons = append(reasons, "the last run did not close the index cleanly")
	}
	g, reason, err := openLive(dir)
	if err != nil {
		unlockDir(lock)
		return nil, err
	}
	if reason != "" {
		reasons = append(reasons, reason)
	}
	ix.cur = g
	if err := removeStale(dir, g.name); err != nil {
		ix.log.Warn("memory: removing old index generations", "err", err)
	}
	if err := os.WriteFile(filepath.Join(dir, dirtyFile), []byte("open\n"), 0o600); err != nil {
		_ = g.close()
		unlockDir(lock)
		return nil, fmt.Errorf("memory: %w", err)
	}
	if len(reasons) > 0 {
		ix.flag(strings.Join(reasons, "; "))
	}
	go ix.writer()
	return ix, nil
}

// openLive opens the generation CURRENT names; when there is none or it is damaged it creates
// an empty one and says why.
func openLive(dir string) (*generation, string, error) {
	name, err := readCurrent(dir)
	var reason string
	switch {
	case err != nil:
		reason = err.Error()
	case name == "":
		reason = "no index yet"
	default:
		g, err := openGeneration(dir, name)
		if err == nil {
			return g, "", nil
		}
		reason = err.Error()
	}
	name, err = nextGenName(dir)
	if err != nil {
		return nil, "", fmt.Errorf("memory: %w", err)
	}
	g, err := createGeneration(dir, name)
	if err != nil {
		return nil, "", err
	}
	if err := writeFileAtomic(dir, currentFile, []byte(name+"\n")); err != nil {
		_ = g.close()
		return nil, "", fmt.Errorf("memory: %w", err)
	}
	return g, reason, nil
}

// Close stops a running rebuild, drains the queue into the index and closes it.
func (ix *Index) Close() error {
	ix.closeOnce.Do(func() {
		ix.rebuildCancel()
		ix.rebuildMu.Lock() // wait for a running Rebuild to return
		defer ix.rebuildMu.Unlock()
		ix.q.close()
		ix.embedCancel() // memories still queued are indexed without vectors
		<-ix.writerDone
		ix.mu.Lock() // waits for searches in flight
		ix.closed = true
		g := ix.cur
		ix.mu.Unlock()
		ix.markers.Wait() // nothing can flag any more
		err := g.close()
		if err == nil {
			err = os.Remove(filepath.Join(ix.dir, dirtyFile))
		}
		unlockDir(ix.lock)
		if err != nil {
			ix.closeErr = fmt.Errorf("memory: close: %w", err)
		}
	})
	return ix.closeErr
}

// NeedsRebuild reports whether the index is known to miss memories (missing or damaged at
// Open, an unclean shutdown, dropped memories, a failed write): the caller should Rebuild.
func (ix *Index) NeedsRebuild() bool {
	ix.health.mu.Lock()
	defer ix.health.mu.Unlock()
	return ix.health.needs
}

// RebuildReason says why NeedsRebuild is true, or "".
func (ix *Index) RebuildReason() string {
	ix.health.mu.Lock()
	defer ix.health.mu.Unlock()
	return ix.health.reason
}

// Stats returns the index's counters.
func (ix *Index) Stats() Stats {
	ix.mu.RLock()
	g := ix.cur
	var st Stats
	if !ix.closed {
		st.Generation = g.name
		st.Docs = g.docCount()
		st.Vectors = g.vec.count()
	}
	ix.mu.RUnlock()
	ix.q.mu.Lock()
	st.Queued = len(ix.q.ops)
	ix.q.mu.Unlock()
	st.Indexed = ix.indexed.Load()
	st.Dropped = ix.dropped.Load()
	st.EmbedFailures = ix.embedFailures.Load()
	ix.health.mu.Lock()
	st.NeedsRebuild, st.RebuildReason = ix.health.needs, ix.health.reason
	ix.health.mu.Unlock()
	return st
}

func (ix *Index) live() *generation {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.cur
}

// lose records that the live index misses memories. While a rebuild watches (tees) the queue
// the loss is covered by the rebuild and only counted against it.
func (ix *Index) lose(reason string) {
	ix.q.mu.Lock()
	covered := ix.q.teeing
	if covered {
		ix.q.teeLosses++
	}
	ix.q.mu.Unlock()
	if covered {
		ix.log.Warn("memory: index missed memories; the running rebuild covers them", "reason", reason)
		return
	}
	ix.flag(reason)
}

// flag sets NeedsRebuild and persists it in the NEEDS_REBUILD marker.
func (ix *Index) flag(reason string) {
	ix.health.mu.Lock()
	ix.health.losses++
	ix.health.needs = true
	seen := strings.Contains(ix.health.reason, reason)
	if !seen && len(ix.health.reason) < 2000 {
		if ix.health.reason != "" {
			ix.health.reason += "; "
		}
		ix.health.reason += reason
	}
	ix.health.mu.Unlock()
	if !seen {
		ix.log.Warn("memory: index needs a rebuild", "reason", reason)
		ix.syncMarker()
	}
}

// clearIf clears NeedsRebuild after a rebuild that started when losses was startLosses,
// unless something was lost outside the rebuild's watch since.
func (ix *Index) clearIf(startLosses uint64) {
	ix.health.mu.Lock()
	if ix.health.losses == startLosses {
		ix.health.needs, ix.health.reason = false, ""
	}
	ix.health.mu.Unlock()
	ix.syncMarker()
}

// syncMarker brings the NEEDS_REBUILD file in line with the health state, off the caller's
// goroutine (flag can be reached from Add, which must not do I/O).
func (ix *Index) syncMarker() {
	ix.markers.Add(1)
	go func() {
		defer ix.markers.Done()
		ix.markerMu.Lock()
		defer ix.markerMu.Unlock()
		ix.health.mu.Lock()
		needs, reason := ix.health.needs, ix.health.reason
		ix.health.mu.Unlock()
		var err error
		if needs {
			err = writeFileAtomic(ix.dir, needsRebuildFile, []byte(reason+"\n"))
		} else if err = os.Remove(filepath.Join(ix.dir, needsRebuildFile)); errors.Is(err, os.ErrNotExist) {
			err = nil
		}
		if err != nil {
			ix.log.Warn("memory: updating the rebuild marker", "err", err)
		}
	}()
}
