package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/daemon/llm"
	"github.com/agentd/agentd/daemon/store"
	"github.com/agentd/agentd/internal/display"
)

// The prompt's history: the last Options.HistoryEpisodes episodes verbatim, and
// before them older ones as one line each — the model's summary once it is made, a plain
// "command → outcome" line until then — newest first until the budget ends. However long
// the agent lives, the history costs one bounded read and never outgrows the budget.
//
// Summaries are made by the model, several episodes per call, stored so each is made once.
// A call is made only when at least summaryMin shown episodes lack one, and at most once
// every summaryEvery steps of an agent's loop: at most 1 + 1/summaryEvery model calls per
// step on average, however long the run.

const (
	olderLines   = 100 // older episodes read per prompt: more never fit a real context
	summaryBatch = 12  // episodes summarized in one call at most
	summaryMin   = 8   // and at least
	summaryEvery = 8   // steps between two summary calls of one agent, at least
	summaryChars = 160 // one summary line, at most
)

// historyMessages renders the agent's history within step.Budget characters.
func (s *episodeHistory) historyMessages(ctx context.Context, l *live, step *commands.Step) ([]string, error) {
	const head = "Progress so far:"
	used := len(head)
	var kept []string // newest first
	recent, err := s.recentEpisodes(ctx, step.AgentID, l.HistoryEpisodes)
	if err != nil {
		return nil, err
	}
	for i := len(recent) - 1; i >= 0; i-- {
		t := EpisodeText(recent[i].Episode)
		if used+len(t)+1 > step.Budget {
			break // no room for the full latest steps: none for older ones
		}
		used += len(t) + 1
		kept = append(kept, t)
	}
	if len(kept) == len(recent) && len(recent) == l.HistoryEpisodes && step.Budget-used >= 40 {
		lines, err := s.older.lines(ctx, s.st, &s.gens, step.AgentID, len(recent)+olderLines, recent)
		if err != nil {
			return nil, err
		}
		for _, l := range lines[min(len(recent), len(lines)):] {
			if used+len(l.text)+1 > step.Budget {
				break
			}
			used += len(l.text) + 1
			kept = append(kept, l.text)
		}
	}
	if len(kept) == 0 {
		return nil, nil
	}
	slices.Reverse(kept)
	return []string{head + "\n" + strings.Join(kept, "\n")}, nil
}

// recentEpisodes returns the agent's latest n episodes (Settings.HistoryEpisodes), oldest first,
// results cut as the history shows them. The history and the memory components both use
// them in every prompt; they share one read, and a step reads none when no episode was
// added since the last (the agent's generation in s.gens has not moved).
func (s *episodeHistory) recentEpisodes(ctx context.Context, agentID string, n int) ([]store.EpisodeLine, error) {
	gen := s.gens.get(agentID)
	s.recentMu.Lock()
	e, ok := s.recent[agentID]
	s.recentMu.Unlock()
	if ok && e.gen == gen && e.n == n {
		return e.lines, nil
	}
	var lines []store.EpisodeLine
	if err := s.st.View(ctx, func(tx *store.Tx) (err error) {
		lines, err = tx.EpisodeLines(agentID, n, resultCut+1)
		return err
	}); err != nil {
		return nil, err
	}
	s.recentMu.Lock()
	if s.recent == nil || len(s.recent) >= maxCachedAgents {
		s.recent = map[string]recentLines{}
	}
	s.recent[agentID] = recentLines{gen: gen, n: n, lines: lines}
	s.recentMu.Unlock()
	return lines, nil
}

// recentLines are an agent's latest n episodes as read at generation gen.
type recentLines struct {
	gen   uint64
	n     int
	lines []store.EpisodeLine
}

// episodeGens counts, per agent, the committed changes to its episodes: a new episode,
// new summaries, the agent removed. A cache filled at generation g is current while the
// agent's generation is still g. A reader takes the generation before it reads, so a
// change committed during the read leaves the cache marked stale, never wrong.
type episodeGens struct {
	mu sync.Mutex
	m  map[string]uint64
}

func (g *episodeGens) get(agentID string) uint64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.m[agentID]
}

// bump records a committed change to the agent's episodes.
func (g *episodeGens) bump(agentID string) {
	g.mu.Lock()
	if g.m == nil {
		g.m = map[string]uint64{}
	}
	g.m[agentID]++
	g.mu.Unlock()
}

// olderLine is an older episode in one line: its summary, or its command and outcome.
func olderLine(e store.EpisodeHead) string {
	if e.Summary != "" {
		return fmt.Sprintf("Step %d: %s", e.Step, e.Summary)
	}
	return fmt.Sprintf("Step %d: %s → %s", e.Step, display.Cut(strings.TrimSpace(CallText(e.Command, e.Args)), 120, display.Ellipsis), e.Outcome)
}

// olderCache keeps each agent's latest episodes as one-line history entries. Episodes
// never change and only this package adds summaries (and then forgets the agent), so
// after the first read a step reads just the episodes that are new since, and nothing
// when there are none: the history costs the same with 10 episodes or 100,000.
type olderCache struct {
	mu     sync.Mutex
	agents map[string]*agentLines
}

type agentLines struct {
	gen    uint64       // the agent's episode generation when read
	newest int64        // the newest episode read
	lines  []cachedLine // newest first
}

type cachedLine struct {
	id   int64
	step int
	text string
}

// maxCachedAgents bounds the caches: past it, they start over (a bound, not an LRU).
const maxCachedAgents = 2000

// lines returns the agent's newest n episodes as lines, newest first, reading from st
// only what the cache lacks. recent are the agent's latest episodes, oldest first, as
// recentEpisodes read them at the current generation: when they reach back to the newest
// cached line, the new lines come from them and st is not read.
func (c *olderCache) lines(ctx context.Context, st *store.Store, gens *episodeGens, agentID string, n int, recent []store.EpisodeLine) ([]cachedLine, error) {
	gen := gens.get(agentID)
	c.mu.Lock()
	cur := c.agents[agentID]
	c.mu.Unlock()
	if cur != nil && cur.gen == gen {
		return cur.lines, nil
	}
	var heads []store.EpisodeHead // newest first
	switch {
	case cur != nil && len(recent) > 0 && recent[0].ID <= cur.newest:
		// recent holds every episode newer than the cache: they are the agent's latest.
		for i := len(recent) - 1; i >= 0 && recent[i].ID > cur.newest; i-- {
			e := recent[i]
			heads = append(heads, store.EpisodeHead{ID: e.ID, Step: e.Step, Command: e.Command, Args: e.Args, Outcome: e.Outcome, Summary: e.Summary})
		}
	default:
		err := st.View(ctx, func(tx *store.Tx) (err error) {
			if cur == nil {
				heads, err = tx.EpisodeHeads(agentID, 0, n)
			} else {
				heads, err = tx.EpisodeHeadsAfter(agentID, cur.newest, n)
			}
			return err
		})
		if err != nil {
			return nil, err
		}
	}
	next := &agentLines{gen: gen, lines: make([]cachedLine, 0, n)}
	for _, h := range heads {
		next.lines = append(next.lines, cachedLine{id: h.ID, step: h.Step, text: olderLine(h)})
	}
	if cur != nil {
		next.lines = append(next.lines, cur.lines[:min(len(cur.lines), n-len(next.lines))]...)
	}
	if len(next.lines) > 0 {
		next.newest = next.lines[0].id
	}
	c.mu.Lock()
	if c.agents == nil || len(c.agents) >= maxCachedAgents {
		c.agents = map[string]*agentLines{}
	}
	if c.agents[agentID] == cur { // else summaries came in meanwhile: keep their entry
		c.agents[agentID] = next
	}
	c.mu.Unlock()
	return next.lines, nil
}

// summarized puts new summaries (by episode id) into the agent's cached lines, in place of
// reading them all again.
func (c *olderCache) summarized(agentID string, lines map[int64]string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cur := c.agents[agentID]
	if cur == nil {
		return
	}
	next := &agentLines{gen: cur.gen, newest: cur.newest, lines: slices.Clone(cur.lines)}
	for i, l := range next.lines {
		if line, ok := lines[l.id]; ok {
			next.lines[i].text = olderLine(store.EpisodeHead{Step: l.step, Summary: line})
		}
	}
	c.agents[agentID] = next
}

// forget drops an agent's lines: it is gone.
func (c *olderCache) forget(agentID string) {
	c.mu.Lock()
	delete(c.agents, agentID)
	c.mu.Unlock()
}

// summaryReply is the model's answer to a summary request.
type summaryReply struct {
	Lines []string `json:"lines"`
}

func summarySchema(n int) *commands.Schema {
	return commands.Object(commands.Prop{Name: "lines", Schema: &commands.Schema{
		Type: "array", Items: commands.String("one step in one line", summaryChars),
		MinItems: commands.Ptr(n), MaxItems: commands.Ptr(n),
	}})
}

const summaryPrompt = `You keep the log of an autonomous agent short. For each numbered step below, write one ` +
	`line of at most 20 words: what the agent did and what came of it (facts, names, numbers that matter later). ` +
	`Reply with one JSON object: "lines", one line per step, in the order given.`

// errStepping leaves the summaries to the step under way.
var errStepping = errors.New("a step is under way")

// storeSummaries stores the agent's summaries waiting for its next step, and their tokens,
// in a transaction of their own, holding mu (its runner's, which orders its changes) —
// unless the agent is thinking or executing: that step's transaction stores them.
func (s *episodeHistory) storeSummaries(ctx context.Context, mu *sync.Mutex, agentID string) {
	if m := s.madeSummaries(agentID); m.lines == nil && m.promptTokens == 0 && m.evalTokens == 0 {
		return
	}
	stepping := func(a *store.Agent) bool { return a.State == api.StateThinking || a.State == api.StateExecuting }
	var busy bool // read first, without the write lock a step under way would wait for
	if err := s.st.View(ctx, func(tx *store.Tx) error {
		a, err := tx.Agent(agentID)
		busy = err == nil && stepping(a)
		return err
	}); err != nil || busy {
		return
	}
	mu.Lock()
	defer mu.Unlock()
	err := s.st.Tx(ctx, func(tx *store.Tx) error {
		a, err := tx.Agent(agentID)
		if err != nil {
			return err
		}
		if stepping(a) {
			return errStepping
		}
		if err := s.writeSummaries(tx, a); err != nil {
			return err
		}
		return tx.UpdateAgent(a)
	})
	if err != nil && !errors.Is(err, errStepping) && !errors.Is(err, store.ErrNotFound) {
		s.log.Warn("storing history summaries", "agent", agentID, "err", err)
	}
}

// makeSummaries summarizes the agent's older unsummarized episodes, if at least
// summaryMin wait, in one model call. A failure is logged and the plain lines stay.
func (s *episodeHistory) makeSummaries(ctx context.Context, l *live, agentID string) {
	// The fast model's one num_ctx (the step may have used the smart model's).
	ld, err := s.llm.LoadFor(ctx, l.Model)
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn("history: summarizing older steps waits for the model", "agent", agentID, "err", err)
		}
		return
	}
	numCtx := ld.NumCtx
	if numCtx <= 0 {
		numCtx = l.MaxContext
	}
	var lines []store.EpisodeLine
	err = s.st.View(ctx, func(tx *store.Tx) (err error) {
		lines, err = tx.EpisodeLines(agentID, l.HistoryEpisodes+olderLines, resultCut+1)
		return err
	})
	if err != nil {
		s.log.Warn("history: reading episodes to summarize", "agent", agentID, "err", err)
		return
	}
	made := s.madeSummaries(agentID) // made before and not stored yet
	var todo []store.EpisodeLine     // newest first
	for i := len(lines) - l.HistoryEpisodes - 1; i >= 0 && len(todo) < summaryBatch; i-- {
		if _, ok := made.lines[lines[i].ID]; lines[i].Summary == "" && !ok {
			todo = append(todo, lines[i])
		}
	}
	if len(todo) < summaryMin {
		return
	}
	slices.Reverse(todo)
	var b strings.Builder
	per := max(200, (numCtx/2*int(defaultCharsPerToken))/len(todo)) // the request stays well inside the context
	for i, e := range todo {
		fmt.Fprintf(&b, "%d. %s\n", i+1, display.Cut(strings.TrimSpace(EpisodeText(e.Episode)), per, display.Ellipsis))
	}
	req := llm.ChatRequest{
		Model: l.Model, NumCtx: ld.NumCtx, NumPredict: min(len(todo)*64, numCtx/2), KeepAlive: ld.KeepAlive,
		Messages: []llm.Message{{Role: "system", Content: summaryPrompt}, {Role: "user", Content: b.String()}},
	}
	var out summaryReply
	res, err := llm.Generate(ctx, s.llm, req, summarySchema(len(todo)), &out)
	s.summaryCalls.Add(1)
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn("history: summarizing older steps failed; they stay as plain lines", "agent", agentID, "err", err)
		}
		return
	}
	fresh := madeSummaries{lines: map[int64]string{}}
	for i, e := range todo {
		if line := display.Cut(strings.TrimSpace(strings.Join(strings.Fields(out.Lines[i]), " ")), summaryChars, display.Ellipsis); line != "" {
			fresh.lines[e.ID] = line
		}
	}
	if res != nil {
		fresh.promptTokens, fresh.evalTokens = int64(res.PromptTokens), int64(res.EvalTokens)
	}
	s.stashSummaries(agentID, fresh)
}

// stashSummaries keeps summaries made for the agent until writeSummaries stores them. An
// agent that never runs another command keeps them in memory only: after a restart they
// are made again, which costs a model call, not a fact.
func (s *episodeHistory) stashSummaries(agentID string, fresh madeSummaries) {
	s.stashMu.Lock()
	defer s.stashMu.Unlock()
	if s.stash == nil {
		s.stash = map[string]*madeSummaries{}
	}
	s.stash[agentID] = s.stash[agentID].plus(fresh)
}

// madeSummaries are summaries made for an agent and not stored yet, with the tokens their
// calls cost.
type madeSummaries struct {
	lines                    map[int64]string // by episode id
	promptTokens, evalTokens int64
}

// plus is m with more summaries and their tokens, as a new value (m may be nil).
func (m *madeSummaries) plus(o madeSummaries) *madeSummaries {
	out := &madeSummaries{lines: maps.Clone(o.lines), promptTokens: o.promptTokens, evalTokens: o.evalTokens}
	if m != nil {
		maps.Copy(out.lines, m.lines)
		out.promptTokens += m.promptTokens
		out.evalTokens += m.evalTokens
	}
	return out
}

// minus is m without what stored holds, as a new value; nil when nothing is left.
func (m *madeSummaries) minus(stored *madeSummaries) *madeSummaries {
	out := &madeSummaries{lines: maps.Clone(m.lines), promptTokens: m.promptTokens - stored.promptTokens, evalTokens: m.evalTokens - stored.evalTokens}
	for id, line := range stored.lines {
		if out.lines[id] == line {
			delete(out.lines, id)
		}
	}
	if len(out.lines) == 0 && out.promptTokens <= 0 && out.evalTokens <= 0 {
		return nil
	}
	return out
}

// dropSummaries forgets the agent's summaries waiting to be stored, which could not be
// (they are made again), keeping their tokens to count.
func (s *episodeHistory) dropSummaries(agentID string) {
	s.stashMu.Lock()
	defer s.stashMu.Unlock()
	if m := s.stash[agentID]; m != nil {
		s.stash[agentID] = &madeSummaries{promptTokens: m.promptTokens, evalTokens: m.evalTokens}
	}
}

// madeSummaries returns the agent's summaries waiting to be stored (empty for none).
func (s *episodeHistory) madeSummaries(agentID string) madeSummaries {
	s.stashMu.Lock()
	defer s.stashMu.Unlock()
	if m := s.stash[agentID]; m != nil {
		return *m
	}
	return madeSummaries{}
}

// storeWith stores the agent's waiting summaries in tx, with a change of a's that the
// caller then updates: every proposal, result, decision and run end does. A failure drops
// the summaries (they are made again), keeps their tokens, and lets the change go on.
func (s *episodeHistory) storeWith(tx *store.Tx, a *store.Agent) {
	if err := s.writeSummaries(tx, a); err != nil {
		s.log.Warn("storing history summaries", "agent", a.ID, "err", err)
		s.dropSummaries(a.ID)
	}
}

// writeSummaries stores, in tx, the summaries made for agent a and not stored yet, and
// adds their calls' tokens to a (which the caller then updates). Once tx commits they
// replace the plain lines of the prompt's history.
func (s *episodeHistory) writeSummaries(tx *store.Tx, a *store.Agent) error {
	s.stashMu.Lock()
	m := s.stash[a.ID]
	s.stashMu.Unlock()
	if m == nil {
		return nil
	}
	for id, line := range m.lines {
		if err := tx.SetEpisodeSummary(a.ID, id, line); err != nil {
			return err
		}
	}
	a.PromptTokens += m.promptTokens
	a.EvalTokens += m.evalTokens
	tx.AfterCommit(func() {
		s.stashMu.Lock()
		// A job that ended meanwhile added its summaries to m (plus): keep only those.
		if cur := s.stash[a.ID]; cur == m {
			delete(s.stash, a.ID)
		} else if cur != nil {
			if rest := cur.minus(m); rest != nil {
				s.stash[a.ID] = rest
			} else {
				delete(s.stash, a.ID)
			}
		}
		s.stashMu.Unlock()
		s.older.summarized(a.ID, m.lines) // the new summaries replace plain lines
	})
	return nil
}

// episodeHistory is the prompt's view of each agent's episodes: their generations, the
// latest episodes in full (recent, under recentMu) and older ones in one line each,
// summarized by the model in the background.
type episodeHistory struct {
	st  *store.Store
	log *slog.Logger
	llm *llm.Client // summarizes older episodes

	gens         episodeGens
	recentMu     sync.Mutex
	recent       map[string]recentLines
	older        olderCache
	summaryCalls atomic.Int64 // model calls made for history summaries

	stashMu sync.Mutex                // guards stash
	stash   map[string]*madeSummaries // by agent: summaries made, stored with its next result
}

// forgetHistory drops a removed agent's cached history.
func (s *episodeHistory) forgetHistory(id string) {
	s.gens.bump(id)
	s.older.forget(id)
	s.stashMu.Lock()
	delete(s.stash, id)
	s.stashMu.Unlock()
}
