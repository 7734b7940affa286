package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/daemon/store"
	"github.com/agentd/agentd/internal/display"
	"github.com/agentd/agentd/memory"
)

// The long-term memory's state, below every part that uses it: the index, the bounds on
// what one memory holds, the search a prompt makes, and that search made ahead.

// IndexBatchDelay is how long the daemon's memory index waits to fill a write batch. Every
// batch costs Bleve a new segment (and later a merge), a couple of milliseconds of CPU
// whatever its size, so batches coalesce the memories of many steps and agents; a memory is
// searchable this much later, while the history shows the latest steps verbatim anyway.
const IndexBatchDelay = 500 * time.Millisecond

// memState is the supervisor's long-term memory; nil when it is off.
type memState struct {
	ix         *memory.Index
	opt        MemoryOptions
	rebuilding atomic.Bool
	ahead      searchAhead // the searches started for agents' next prompts (below)
}

func newMemState(o MemoryOptions) *memState {
	if o.Index == nil {
		return nil
	}
	return &memState{ix: o.Index, opt: o}
}

// Bounds on what one memory holds.
const (
	maxMemoryText   = api.MaxTextBytes // bytes of a memory added through the API or memory_add's caller
	fileChunkBytes  = 1500             // a file the agent writes is remembered in chunks of about this size
	maxFileChunks   = 64
	episodeResultIn = 1500 // bytes of a command's result an episode memory keeps
)

func toDoc(m store.Memory) memory.Doc {
	return memory.Doc{ID: m.ID, Agent: m.AgentID, Kind: memory.Kind(m.Kind), Text: m.Text, Source: m.Source, Created: m.Created,
		Speaker: m.Speaker, Context: m.Context}
}

// cleanText makes text safe to store and index: valid UTF-8, no NUL bytes.
func cleanText(s string) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	return strings.ReplaceAll(s, "\x00", " ")
}

// noteID makes a note's id from its owner and text, so saving the same note twice keeps one.
func noteID(agentID, text string) string {
	h := sha256.Sum256([]byte(agentID + "\x00" + text))
	return "m-n-" + hex.EncodeToString(h[:8])
}

// memoryPage is how many memories one read transaction of a rebuild takes.
const memoryPage = 2000

// candidates searches q and prepares the hits but skip for the memory section.
func (m *memState) candidates(ctx context.Context, q memory.Query, skip map[string]bool) (*memory.Candidates, error) {
	hits, err := m.ix.Search(ctx, q)
	if err != nil {
		return nil, err
	}
	hits = slices.DeleteFunc(hits, func(h memory.Hit) bool { return skip[h.ID] })
	return memory.Prepare(hits, q.Text), nil
}

// promptQuery is the memory search a step's prompt makes: the task and what the latest two
// steps did, for as many hits as the prompt chooses from plus the ones it drops, skip: the
// memories of the recent steps, which the history shows in full anyway.
func (m *memState) promptQuery(agentID, task string, recent []store.EpisodeLine) (memory.Query, map[string]bool) {
	skip := map[string]bool{}
	q := []string{task}
	for i, e := range recent {
		skip["m-"+e.ProposalID] = true
		if i >= len(recent)-2 { // the latest steps say what the agent is doing now
			q = append(q, e.Command, e.Reasoning, display.Cut(strings.TrimSpace(e.Feedback), 300, display.Ellipsis), display.Cut(strings.TrimSpace(e.Result), 300, display.Ellipsis))
		}
	}
	return memory.Query{Agent: agentID, Text: strings.Join(q, "\n"), K: memory.PromptCandidates + len(skip), HalfLife: m.opt.HalfLife}, skip
}

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
