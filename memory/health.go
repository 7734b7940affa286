package memory

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// health says whether the live index is known to miss memories, and keeps the
// NEEDS_REBUILD marker file in line with it. losses counts the events that made it so; a
// rebuild clears the flag only if no loss happened outside its watch.
//
// Locking rule: mu guards needs, reason and losses, and is never held during I/O (flag is
// reached from Add, which must not wait on the disk). fileMu guards the marker file: it
// orders the writes, each of which reads the state under mu when it starts, so the last
// write is of the latest state. Order: fileMu before mu. writes counts marker writes in
// flight.
type health struct {
	dir string
	log *slog.Logger

	mu     sync.Mutex
	needs  bool
	reason string
	losses uint64

	fileMu sync.Mutex
	writes sync.WaitGroup
}

// state returns whether a rebuild is needed, and why.
func (h *health) state() (needs bool, reason string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.needs, h.reason
}

// lossCount is the number of losses flagged so far.
func (h *health) lossCount() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.losses
}

// flag records a loss: NeedsRebuild turns true, persisted in the NEEDS_REBUILD marker.
func (h *health) flag(reason string) {
	h.mu.Lock()
	h.losses++
	h.needs = true
	seen := strings.Contains(h.reason, reason)
	if !seen && len(h.reason) < 2000 {
		if h.reason != "" {
			h.reason += "; "
		}
		h.reason += reason
	}
	h.mu.Unlock()
	if !seen {
		h.log.Warn("memory: index needs a rebuild", "reason", reason)
		h.syncMarker()
	}
}

// clearIf clears NeedsRebuild after a rebuild that started when losses was startLosses,
// unless something was lost outside the rebuild's watch since.
func (h *health) clearIf(startLosses uint64) {
	h.mu.Lock()
	if h.losses == startLosses {
		h.needs, h.reason = false, ""
	}
	h.mu.Unlock()
	h.syncMarker()
}

// syncMarker brings the NEEDS_REBUILD file in line with the state, off the caller's
// goroutine.
func (h *health) syncMarker() {
	h.writes.Go(func() {
		h.fileMu.Lock()
		defer h.fileMu.Unlock()
		needs, reason := h.state()
		var err error
		if needs {
			err = writeFileAtomic(h.dir, needsRebuildFile, []byte(reason+"\n"))
		} else if err = os.Remove(filepath.Join(h.dir, needsRebuildFile)); errors.Is(err, os.ErrNotExist) {
			err = nil
		}
		if err != nil {
			h.log.Warn("memory: updating the rebuild marker", "err", err)
		}
	})
}

// wait returns once the marker writes started so far are done.
func (h *health) wait() { h.writes.Wait() }
