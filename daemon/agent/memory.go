package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/daemon/store"
	"github.com/agentd/agentd/internal/display"
	"github.com/agentd/agentd/internal/randid"
	"github.com/agentd/agentd/memory"
)

// Long-term memory. Every memory is written to the store first, in the same
// transaction as the episode or decision it comes from, and handed to the Bleve index only
// once that transaction has committed (store.Tx.AfterCommit): the index can lose things —
// a full queue, a crash — but never hold something the store does not. Whatever it loses,
// a rebuild from the store brings back.

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
	ahead      searchAhead // the searches started for agents' next prompts (memory_ahead.go)
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

// episodeMemory is what an episode leaves in memory: the action, the reasoning and the
// result's start (or the person's feedback or answer, then of kind feedback).
func episodeMemory(agentID string, e *api.Episode) store.Memory {
	kind := memory.KindEpisode
	if e.Outcome == "feedback" || e.Command == commands.AskUser {
		kind = memory.KindFeedback
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Step %d: %s → %s", e.Step, CallText(e.Command, e.Args), e.Outcome)
	if r := strings.TrimSpace(e.Reasoning); r != "" {
		fmt.Fprintf(&b, "\nReasoning: %s", r)
	}
	switch {
	case e.Outcome == "feedback":
		fmt.Fprintf(&b, "\nHuman feedback: %s", e.Feedback)
	case strings.TrimSpace(e.Result) != "":
		fmt.Fprintf(&b, "\nResult: %s", display.Cut(strings.TrimSpace(e.Result), episodeResultIn, display.Ellipsis))
	}
	return store.Memory{
		ID: "m-" + e.ProposalID, AgentID: agentID, Kind: string(kind), Text: b.String(),
		Source: fmt.Sprintf("step %d %s", e.Step, e.Command),
	}
}

// noteID makes a note's id from its owner and text, so saving the same note twice keeps one.
func noteID(agentID, text string) string {
	h := sha256.Sum256([]byte(agentID + "\x00" + text))
	return "m-n-" + hex.EncodeToString(h[:8])
}

// chunkText splits s into pieces of about size bytes, at line ends where it can, on rune
// boundaries always; at most max pieces (the rest is dropped).
func chunkText(s string, size, max int) []string {
	var out []string
	for len(s) > 0 && len(out) < max {
		if len(s) <= size {
			out = append(out, s)
			break
		}
		cut := strings.LastIndexByte(s[:size], '\n') + 1
		if cut < size/2 {
			cut = size
			for cut > 0 && !utf8.RuneStart(s[cut]) {
				cut--
			}
		}
		out = append(out, s[:cut])
		s = s[cut:]
	}
	kept := out[:0]
	for _, c := range out {
		if strings.TrimSpace(c) != "" {
			kept = append(kept, c)
		}
	}
	return kept
}

// memoryPage is how many memories one read transaction of a rebuild takes.
const memoryPage = 2000

// memoryEnv is commands.Memory for the memory commands.
type memoryEnv struct{ s *memoryService }

func (m memoryEnv) Save(ctx context.Context, agentID, text string) (string, error) {
	mem := store.Memory{ID: noteID(agentID, text), AgentID: agentID, Kind: string(memory.KindNote), Text: text, Source: commands.MemoryAdd}
	err := m.s.st.Tx(ctx, func(tx *store.Tx) error { return m.s.remember(tx, mem) })
	return mem.ID, err
}

func (m memoryEnv) Recall(ctx context.Context, agentID, query string, k int) ([]commands.Recalled, error) {
	hits, err := m.s.mem.ix.Search(ctx, memory.Query{Agent: agentID, Text: query, K: k, HalfLife: m.s.mem.opt.HalfLife})
	if err != nil {
		return nil, err
	}
	out := make([]commands.Recalled, len(hits))
	for i, h := range hits {
		out[i] = commands.Recalled{Kind: string(h.Kind), Source: h.Source, Text: h.Text, Score: h.Score, Created: h.Created}
	}
	return out, nil
}

// commandMemory is the memory the commands get: nil without long-term memory.
func (s *memoryService) commandMemory() commands.Memory {
	if s.mem == nil {
		return nil
	}
	return memoryEnv{s}
}

// goalKey is the agent_state key of the goal state.
const goalKey = "memory.goal"

// goalDone is how many done items the goal state lists; older ones are only counted.
const goalDone = 8

// goalState is the run's plan and what is done, kept outside the transcript (which is
// summarized and cut) so the agent never loses track of them.
type goalState struct {
	Run       string   `json:"run"`
	Plan      string   `json:"plan,omitempty"`
	Done      []string `json:"done,omitempty"` // the latest goalDone, oldest first
	DoneCount int      `json:"done_count,omitempty"`
}

// updateGoal advances the goal state with a finished step: the plan the model stated with
// its proposal, and the step when it succeeded.
func updateGoal(tx *store.Tx, agentID string, p *api.Proposal, ep *api.Episode) error {
	var g goalState
	raw, err := tx.StateValue(agentID, goalKey)
	if err != nil {
		return err
	}
	if raw != nil {
		_ = json.Unmarshal(raw, &g) // a damaged value starts over
	}
	if g.Run != ep.RunID {
		g = goalState{Run: ep.RunID}
	}
	if plan := strings.TrimSpace(p.Thoughts.Plan); plan != "" {
		g.Plan = display.Cut(strings.TrimSpace(plan), 600, display.Ellipsis)
	}
	if ep.Outcome == "succeeded" && ep.Command != commands.Finish {
		g.Done = append(g.Done, fmt.Sprintf("step %d: %s", ep.Step, display.Cut(strings.TrimSpace(CallText(ep.Command, ep.Args)), 160, display.Ellipsis)))
		if len(g.Done) > goalDone {
			g.Done = g.Done[len(g.Done)-goalDone:]
		}
		g.DoneCount++
	}
	b, _ := json.Marshal(g)
	return tx.SetStateValue(agentID, goalKey, b)
}

// goalComponent shows the goal state. It is small and bounded, so it is not budgeted.
type goalComponent struct{}

func (goalComponent) Name() string { return "goal" }

func (goalComponent) Messages(ctx context.Context, step *commands.Step) ([]string, error) {
	raw, err := step.State.Get(ctx, goalKey)
	if err != nil || raw == nil {
		return nil, err
	}
	var g goalState
	if err := json.Unmarshal(raw, &g); err != nil {
		return nil, fmt.Errorf("goal state: %w", err)
	}
	if g.Run != step.RunID || (g.Plan == "" && len(g.Done) == 0) {
		return nil, nil
	}
	var b strings.Builder
	b.WriteString("Goal state for this task:")
	if g.Plan != "" {
		fmt.Fprintf(&b, "\nYour plan: %s", g.Plan)
	}
	if len(g.Done) > 0 {
		fmt.Fprintf(&b, "\nDone so far (%s succeeded", display.Count(g.DoneCount, "step", "steps"))
		if g.DoneCount > len(g.Done) {
			fmt.Fprintf(&b, "; the last %d", len(g.Done))
		}
		b.WriteString("):")
		for _, d := range g.Done {
			b.WriteString("\n- " + d)
		}
	}
	return []string{b.String()}, nil
}

// memoryComponent brings long-term memory into the agent: the memories relevant to the
// task and the latest steps (budgeted, before history), the memory_add and memory_search
// commands, and the files the agent writes, remembered in chunks.
type memoryComponent struct {
	mem     *memState // nil: no long-term memory
	st      *store.Store
	memory  *memoryService
	history *episodeHistory // the latest steps, shared with the history component
	model   *modelState     // how many characters a token holds, for the budget
	l       *live           // the settings generation whose pipeline holds it
	// offered are memory commands the agent's command list has already (not offered twice).
	offered map[string]bool
}

// memoryName is the memory component's name in the config's component lists.
const memoryName = "memory"

func (memoryComponent) Name() string { return memoryName }
func (memoryComponent) Budgeted()    {}

// Commands implements CommandProvider.
func (c memoryComponent) Commands(context.Context, *commands.Step) ([]commands.Command, error) {
	if c.mem == nil {
		return nil, nil
	}
	var out []commands.Command
	for _, n := range []string{commands.MemoryAdd, commands.MemorySearch} {
		if cmd, ok := commands.Lookup(n); ok && !c.offered[n] {
			out = append(out, cmd)
		}
	}
	return out, nil
}

// memoryShare is the part of what the prompt has left that memories may take at least;
// historyFloor the characters they always leave to the history (its newest step) once
// the agent has one.
const (
	memoryShare  = 0.4
	historyFloor = 600
)

// memoryBudget is the characters the memory section may take: its reserve at this
// context size (memory.SectionBudget, about 2,000 at num_ctx 2048) or its share of what
// the prompt has left, whichever is more, within what the prompt has left (less the
// history's floor when the agent has a history) and the configured BudgetTokens. At
// num_ctx 2048 the first step's prompt leaves about 2,400 characters: the whole reserve;
// later steps leave the history 600 and memories about 1,800.
func memoryBudget(step *commands.Step, budgetTokens int, cpt float64, history bool) int {
	b := int(float64(step.Budget) * memoryShare)
	if step.ContextTokens > 0 {
		floor := 0
		if history {
			floor = historyFloor
		}
		b = max(b, min(memory.SectionBudget(step.ContextTokens, cpt), step.Budget-floor))
	}
	return min(b, int(float64(budgetTokens)*cpt))
}

// Messages implements MessageProvider: the top-k memories for the task and the latest
// steps, within the memory budget, leaving out the steps history shows in full anyway.
// memory.Fit chooses and trims them (snippets around the query's words, no near-copies).
func (c memoryComponent) Messages(ctx context.Context, step *commands.Step) ([]string, error) {
	m := c.mem
	if m == nil {
		return nil, nil
	}
	recent, err := c.history.recentEpisodes(ctx, step.AgentID, c.l.HistoryEpisodes) // shared with the history
	if err != nil {
		return nil, err
	}
	budget := memoryBudget(step, m.opt.BudgetTokens, c.model.charsPerToken(c.l.Model), len(recent) > 0)
	if budget < len(memoryHead)+200 {
		return nil, nil
	}
	q, skip := m.promptQuery(step.AgentID, step.Task, recent)
	cands, ok := m.ahead.take(ctx, q, skip)
	if !ok {
		if cands, err = m.candidates(ctx, q, skip); err != nil {
			return nil, err
		}
	}
	if sec := memorySectionOf(cands, budget, m.opt.K); sec != "" {
		return []string{sec}, nil
	}
	return nil, nil
}

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

// memoryHead opens the memory section.
const memoryHead = "Relevant memories (from past steps, feedback, notes and files; by day, the most relevant first):"

// memorySectionOf renders the memory section of at most budget characters from the
// candidates, showing at most k memories; "" when none fits.
func memorySectionOf(cands *memory.Candidates, budget, k int) string {
	shown := cands.Fit(memory.FitOptions{Budget: budget - len(memoryHead), K: k})
	if len(shown) == 0 {
		return ""
	}
	return memoryHead + memory.Section(shown)
}

// AfterExecute implements commands.AfterExecute: a file the agent wrote is remembered, in
// chunks (write_file replaces what was remembered of that file; append_to_file adds), and
// a file it deleted is forgotten.
func (c memoryComponent) AfterExecute(ctx context.Context, step *commands.Step, o *commands.Outcome) error {
	if c.mem == nil {
		return nil
	}
	var args struct {
		Path     string `json:"path"`
		Contents string `json:"contents"`
		Text     string `json:"text"`
	}
	switch o.Command {
	case "write_file", "append_to_file", "delete_file":
	default:
		return nil
	}
	if err := json.Unmarshal(o.Args, &args); err != nil || args.Path == "" {
		return nil // validated before it ran; nothing to remember otherwise
	}
	args.Path = filepath.Clean(args.Path) // "./a.txt" and "a.txt" are one file's memories
	if o.Command == "delete_file" {
		return writeWithStep(ctx, c.st, func(tx *store.Tx) error {
			ids, err := tx.DeleteMemories(step.AgentID, string(memory.KindFile), args.Path)
			c.memory.forget(tx, ids)
			return err
		})
	}
	replace, text := o.Command == "write_file", args.Contents
	if !replace {
		text = args.Text
	}
	chunks := chunkText(cleanText(text), fileChunkBytes, maxFileChunks)
	return writeWithStep(ctx, c.st, func(tx *store.Tx) error {
		if replace {
			ids, err := tx.DeleteMemories(step.AgentID, string(memory.KindFile), args.Path)
			if err != nil {
				return err
			}
			c.memory.forget(tx, ids)
		}
		ms := make([]store.Memory, len(chunks))
		for i, ch := range chunks {
			ms[i] = store.Memory{ID: randid.ID("m-f-"), AgentID: step.AgentID, Kind: string(memory.KindFile), Text: ch, Source: args.Path}
		}
		return c.memory.remember(tx, ms...)
	})
}

var (
	_ commands.Budgeted        = memoryComponent{}
	_ commands.CommandProvider = memoryComponent{}
	_ commands.AfterExecute    = memoryComponent{}
	_ commands.MessageProvider = goalComponent{}
	_ commands.Memory          = memoryEnv{}
)

// offered names the memory commands a built-in command list has already.
func offered(builtin commands.Set) map[string]bool {
	out := map[string]bool{}
	for _, n := range []string{commands.MemoryAdd, commands.MemorySearch} {
		if _, ok := builtin.Get(n); ok {
			out[n] = true
		}
	}
	return out
}

// stagedWrites are store writes an AfterExecute component hands to the step's result
// transaction instead of committing them itself: one durable commit (one fsync) per step
// instead of two, and a file's memories land atomically with the episode that wrote it.
// The runner puts one in the context of the components it calls (withStagedWrites).
type stagedWrites struct{ fns []func(*store.Tx) error }

type stagedKey struct{}

func withStagedWrites(ctx context.Context, sw *stagedWrites) context.Context {
	return context.WithValue(ctx, stagedKey{}, sw)
}

// writeWithStep runs write in the step's result transaction when ctx carries one, else
// in a transaction of its own.
func writeWithStep(ctx context.Context, st *store.Store, write func(*store.Tx) error) error {
	if sw, ok := ctx.Value(stagedKey{}).(*stagedWrites); ok && sw != nil {
		sw.fns = append(sw.fns, write)
		return nil
	}
	return st.Tx(ctx, write)
}
