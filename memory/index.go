package memory

import (
	"context"
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
//
// Locking: each piece of mutable state has one owner and one lock.
//   - mu guards cur and closed (the live generation); searches hold it for reading, the
//     swap and Close for writing.
//   - rebuildMu guards no field: held for a whole Rebuild, it lets one run at a time, and
//     Close takes it to wait for the running one.
//   - q.mu guards the queue and the rebuild's tee (queue); prog.mu the writer's progress.
//   - health owns NeedsRebuild and its marker file (see its rule).
//   - each generation's vectorStore.mu guards its vectors; taken under mu by searches.
//
// Order, when two are held: rebuildMu, then mu, then q.mu, then health.mu (a search that
// finds the index damaged flags it under mu); mu before vectorStore.mu. Nothing is taken
// under health.mu, vectorStore.mu or prog.mu. The writer goroutine alone writes
// generations, so the Bleve indexes need no lock of ours.
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

	health health

	indexed atomic.Uint64
	dropped atomic.Uint64
	// slowForms counts the searches that ran past the fast form: the wide form and the
	// exhaustive one (searchBM25). A prompt's ordinary query must not.
	slowForms     atomic.Uint64
	embedFailures atomic.Uint64
	lastWarn      atomic.Int64 // unix nanos of the last embedding warning

	closeOnce sync.Once
	closeErr  error
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
	ix := &Index{dir: dir, opts: opts, log: opts.Logger, lock: lock, writerDone: make(chan struct{}),
		health: health{dir: dir, log: opts.Logger}}
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
		ix.health.flag(strings.Join(reasons, "; "))
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
		ix.health.wait() // nothing can flag any more
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
	needs, _ := ix.health.state()
	return needs
}

// RebuildReason says why NeedsRebuild is true, or "".
func (ix *Index) RebuildReason() string {
	_, reason := ix.health.state()
	return reason
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
	st.NeedsRebuild, st.RebuildReason = ix.health.state()
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
	ix.health.flag(reason)
}
