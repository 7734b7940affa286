package ollamatest

import (
	"net/http"
	"time"
)

// SetParallel makes the fake generate at most n replies at once, as Ollama does with
// OLLAMA_NUM_PARALLEL=n: the other chat requests wait, in arrival order, until a slot
// frees. 0, the default, sets no limit.
func (f *Fake) SetParallel(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sem = nil
	if n > 0 {
		f.sem = make(chan struct{}, n)
	}
}

// Load reports the most chat replies generated at once so far and the time spent
// generating, summed over requests (a slot busy for 1s twice counts 2s).
func (f *Fake) Load() (maxInFlight int, busy time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.maxInFlight, f.busyTime
}

// enter waits for a generation slot; false when the request or the fake ended first.
func (f *Fake) enter(r *http.Request) bool {
	f.mu.Lock()
	sem := f.sem
	f.mu.Unlock()
	if sem != nil {
		select {
		case sem <- struct{}{}:
		case <-r.Context().Done():
			return false
		case <-f.closed:
			return false
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.inFlight++
	f.maxInFlight = max(f.maxInFlight, f.inFlight)
	return true
}

// leave gives back the slot taken at start.
func (f *Fake) leave(start time.Time) {
	f.mu.Lock()
	f.inFlight--
	f.busyTime += time.Since(start)
	sem := f.sem
	f.mu.Unlock()
	if sem != nil {
		select {
		case <-sem:
		default: // SetParallel replaced the semaphore meanwhile
		}
	}
}
