package agent

import (
	"context"
	"maps"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/daemon/store"
	"github.com/agentd/agentd/memory"
)

// Searching memory ahead. With a large index the prompt's memory search is the
// biggest part of a step's own time, and it depends only on the task and the latest steps.
// So once a command's result is known, the search the next prompt will make is started on
// the other core while the result is recorded (its transaction and fsync), its hits
// analyzed for the section (memory.Prepare), and the memory component takes them when
// its query turns out the same; anything else (another task, a
// summary that changed the recent steps, a reload) is a different query and searched as
// before. A search ahead is used only while fresh (aheadMaxAge, well under the index's own
// IndexBatchDelay), so the prompt shows what a search made then would have shown.

// aheadMaxAge is how old a search ahead may be when its prompt takes it.
const aheadMaxAge = 200 * time.Millisecond

// Searches ahead no prompt took (their agent stopped after its result) are swept once
// aheadSweepAt agents have one, when older than aheadKept.
const (
	aheadSweepAt = 64
	aheadKept    = time.Minute
)

// searchAhead holds, per agent, the one search started for its next prompt.
type searchAhead struct {
	mu sync.Mutex              // guards m
	m  map[string]*aheadSearch // by agent id
	// used counts the prompts that took a search ahead; stale those whose search ahead was
	// too old, and missed those that had none for their query (tests read them).
	used, stale, missed atomic.Int64
}

// aheadSearch is one search under way or done, with the memories it leaves out (skip);
// done closes when cands, err and ended are set.
type aheadSearch struct {
	q       memory.Query
	skip    map[string]bool
	started time.Time
	done    chan struct{}
	cands   *memory.Candidates // the hits prepared for the memory section
	err     error
	ended   time.Time
}

// start begins q for the agent's next prompt in a goroutine spawn tracks, replacing any
// search started before for that agent: the search, and the hits but skip prepared for
// the memory section (memState.candidates).
func (a *searchAhead) start(m *memState, q memory.Query, skip map[string]bool, spawn func(func(context.Context)) bool) {
	s := &aheadSearch{q: q, skip: skip, started: time.Now(), done: make(chan struct{})}
	if !spawn(func(ctx context.Context) {
		defer close(s.done)
		s.cands, s.err = m.candidates(ctx, q, skip)
		s.ended = time.Now()
	}) {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.m == nil {
		a.m = map[string]*aheadSearch{}
	}
	if len(a.m) >= aheadSweepAt {
		for id, old := range a.m {
			if time.Since(old.started) > aheadKept {
				delete(a.m, id)
			}
		}
	}
	a.m[q.Agent] = s
}

// take returns the candidates of the search started for q and skip, waiting for it to
// end, and false when there is none for exactly those, it is too old, or it failed: then
// the caller searches.
func (a *searchAhead) take(ctx context.Context, q memory.Query, skip map[string]bool) (*memory.Candidates, bool) {
	a.mu.Lock()
	s := a.m[q.Agent]
	delete(a.m, q.Agent)
	a.mu.Unlock()
	// Every field of the query: a field added later must match too.
	if s == nil || !reflect.DeepEqual(s.q, q) || !maps.Equal(s.skip, skip) {
		a.missed.Add(1)
		return nil, false
	}
	select {
	case <-s.done:
	case <-ctx.Done():
		a.missed.Add(1)
		return nil, false
	}
	if s.err != nil {
		a.missed.Add(1)
		return nil, false
	}
	// Its age counts from when it read the index (a query embedding may have taken long
	// before that).
	if time.Since(s.ended) > aheadMaxAge {
		a.stale.Add(1)
		return nil, false
	}
	a.used.Add(1)
	return s.cands, true
}

// searchAhead starts the memory search of the agent's next prompt, as the memory component
// will make it once ep is recorded: its latest n episodes are then the ones read now and
// ep. Without long-term memory it does nothing.
func (s *memoryService) searchAhead(ctx context.Context, h *episodeHistory, agentID, task string, n int, ep *api.Episode) {
	m := s.mem
	if m == nil || n <= 0 {
		return
	}
	recent, err := h.recentEpisodes(ctx, agentID, n)
	if err != nil {
		return // the prompt reads them itself
	}
	recent = append(recent[max(0, len(recent)+1-n):len(recent):len(recent)], lineOf(ep))
	q, skip := m.promptQuery(agentID, task, recent)
	m.ahead.start(m, q, skip, s.spawn)
}

// lineOf is ep as the store's EpisodeLines reads it back for the prompt: result and
// feedback cut to their first resultCut+1 characters.
func lineOf(ep *api.Episode) store.EpisodeLine {
	e := *ep
	e.Result, e.Feedback = firstChars(e.Result, resultCut+1), firstChars(e.Feedback, resultCut+1)
	return store.EpisodeLine{Episode: e}
}

// firstChars is s's first n characters, as SQLite's substr(s, 1, n) counts them.
func firstChars(s string, n int) string {
	for i := range s {
		if n == 0 {
			return s[:i]
		}
		n--
	}
	return s
}
