package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	ollama "github.com/ollama/ollama/api"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/daemon/config"
	"github.com/agentd/agentd/daemon/store"
	"github.com/agentd/agentd/internal/testutil"
	"github.com/agentd/agentd/memory"
)

// openIndex opens a memory index in dir that writes at once (no batching delay).
func openIndex(t testing.TB, dir string) *memory.Index {
	t.Helper()
	ix, err := memory.Open(dir, memory.Options{BatchDelay: -1})
	if err != nil {
		t.Fatal(err)
	}
	return ix
}

// withMemory gives the harness's supervisor an index under its temp dir.
func withMemory(t *testing.T) func(*Options) {
	return func(o *Options) {
		ix := openIndex(t, filepath.Join(o.StateDir, "memory"))
		t.Cleanup(func() { ix.Close() })
		o.Memory = MemoryOf(config.Default().Memory, ix)
	}
}

func flush(t testing.TB, ix *memory.Index) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := ix.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}

func storedMemories(t testing.TB, st *store.Store, agentID string) []store.Memory {
	t.Helper()
	var ms []store.Memory
	err := st.View(context.Background(), func(tx *store.Tx) (err error) {
		ms, err = tx.Memories(store.MemoryFilter{AgentID: agentID, OnlyOwn: true, Limit: 1000})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

func TestMemoryRemembersStepsNotesAndFiles(t *testing.T) {
	h := newHarness(t, withMemory(t))
	replies := []string{
		reply("write_file", map[string]string{"path": "notes/codes.txt", "contents": "The launch code is 4711.\nThe backup code is 0815."}),
		reply(commands.MemoryAdd, map[string]string{"text": "Ann prefers tabs over spaces"}),
		reply("read_file", map[string]string{"path": "notes/codes.txt"}),
		reply("finish", map[string]string{"reason": "done"}),
	}
	var n atomic.Int32
	h.fake.OnChat(func(*ollama.ChatRequest) (string, error) {
		i := int(n.Add(1)) - 1
		if i == 1 {
			// Indexing is asynchronous: let the file written in step 1 reach the index
			// before the third prompt is built, so the test can look for it there.
			flush(t, h.opt.Memory.Index)
		}
		if i >= len(replies) {
			return reply("finish", map[string]string{"reason": "done"}), nil
		}
		return replies[i], nil
	})
	a := h.create(api.CreateAgentRequest{Name: "keeper", Description: "keeps codes", Task: "Write down the launch code",
		Policy: &api.Policy{Mode: "auto", AutoSteps: 10}})
	h.waitFor(a.ID, "idle", func(a *api.Agent) bool { return a.State == api.StateIdle })
	ix := h.opt.Memory.Index
	flush(t, ix)

	kinds := map[string]int{}
	for _, m := range storedMemories(t, h.st, a.ID) {
		kinds[m.Kind]++
	}
	if kinds["episode"] != 4 || kinds["note"] != 1 || kinds["file"] != 1 {
		t.Errorf("memories by kind = %v, want 4 episodes, 1 note, 1 file chunk", kinds)
	}
	hits, err := ix.Search(context.Background(), memory.Query{Agent: a.ID, Text: "launch code", Kinds: []memory.Kind{memory.KindFile}})
	if err != nil || len(hits) != 1 || hits[0].Source != "notes/codes.txt" {
		t.Fatalf("file search = %+v, %v", hits, err)
	}
	// memory_add ran and its note is searchable by the agent (and by memory_search).
	if out := h.history(a.ID)[1]; out.Command != commands.MemoryAdd || out.Result != "saved to memory" {
		t.Errorf("memory_add episode = %+v", out)
	}
	// The third prompt recalled the file, and offered the memory commands.
	reqs := h.fake.Requests()
	third := joinContent(reqs[2].Messages)
	if !strings.Contains(third, "Relevant memories") || !regexp.MustCompile(`\n\d+ \w+ \d{4}:\n- \[file, notes/codes.txt\] The launch code is 4711\.`).MatchString(third) {
		t.Errorf("third prompt has no relevant memories:\n%s", third)
	}
	if !strings.Contains(third, "- memory_search(") || !strings.Contains(third, "- memory_add(") {
		t.Errorf("memory commands not offered:\n%s", third)
	}
	if !strings.Contains(third, "Goal state for this task:\nYour plan: p\nDone so far (2 steps succeeded):\n- step 1: write_file(") {
		t.Errorf("third prompt has no goal state:\n%s", third)
	}
}

// A file the agent deletes is forgotten, whatever spelling of its path it used; other
// files are kept.
func TestMemoryForgetsDeletedFiles(t *testing.T) {
	mem := withMemory(t)
	h := newHarness(t, mem, func(o *Options) { o.Commands = append(slices.Clone(testCommands), "delete_file") })
	replies := []string{
		reply("write_file", map[string]string{"path": "notes/a.txt", "contents": "alpha file"}),
		reply("write_file", map[string]string{"path": "notes/b.txt", "contents": "bravo file"}),
		reply("delete_file", map[string]string{"path": "./notes/a.txt"}),
		reply("finish", map[string]string{"reason": "done"}),
	}
	var n atomic.Int32
	h.fake.OnChat(func(*ollama.ChatRequest) (string, error) {
		i := min(int(n.Add(1))-1, len(replies)-1)
		return replies[i], nil
	})
	a := h.create(api.CreateAgentRequest{Name: "tidy", Description: "tidies", Task: "Tidy the notes",
		Policy: &api.Policy{Mode: "auto", AutoSteps: 10}})
	h.waitFor(a.ID, "idle", func(a *api.Agent) bool { return a.State == api.StateIdle })
	ix := h.opt.Memory.Index
	flush(t, ix)
	var files []string
	for _, m := range storedMemories(t, h.st, a.ID) {
		if m.Kind == "file" {
			files = append(files, m.Source)
		}
	}
	if !slices.Equal(files, []string{"notes/b.txt"}) {
		t.Errorf("file memories kept = %q, want only notes/b.txt", files)
	}
	hits, err := ix.Search(context.Background(), memory.Query{Agent: a.ID, Text: "alpha bravo file", Kinds: []memory.Kind{memory.KindFile}})
	if err != nil || len(hits) != 1 || hits[0].Source != "notes/b.txt" {
		t.Fatalf("file search after delete = %+v, %v; want notes/b.txt alone", hits, err)
	}
}

func TestMemoryForgottenWithItsAgent(t *testing.T) {
	h := newHarness(t, withMemory(t))
	a := h.create(api.CreateAgentRequest{Name: "gone", Description: "d", Goals: []string{"g"}, Start: new(bool)})
	ctx := context.Background()
	if _, err := h.sup.memoryService.AddMemory(ctx, api.MemoryAddRequest{Agent: "gone", Text: "zebra crossing"}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.sup.memoryService.AddMemory(ctx, api.MemoryAddRequest{Text: "zebra stripes are shared"}); err != nil {
		t.Fatal(err)
	}
	if err := h.sup.runs.DeleteAgent(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	flush(t, h.opt.Memory.Index)
	hits, _ := h.sup.memoryService.SearchMemory(ctx, api.MemorySearchRequest{Query: "zebra"})
	if len(hits) != 1 || hits[0].AgentID != "" {
		t.Errorf("after rm, search = %+v; want only the shared memory", hits)
	}
	if ms := storedMemories(t, h.st, a.ID); len(ms) != 0 {
		t.Errorf("store still holds %d memories of the removed agent", len(ms))
	}
}

func TestMemoryRebuiltAfterIndexLoss(t *testing.T) {
	h := newHarness(t, withMemory(t))
	ctx := context.Background()
	h.create(api.CreateAgentRequest{Name: "mind", Description: "d", Goals: []string{"g"}, Start: new(bool)})
	for i := range 50 {
		if _, err := h.sup.memoryService.AddMemory(ctx, api.MemoryAddRequest{Agent: "mind", Text: fmt.Sprintf("fact %d about the aurora", i)}); err != nil {
			t.Fatal(err)
		}
	}
	h.stop()
	h.opt.Memory.Index.Close()
	dir := filepath.Join(h.dir, "memory")
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	ix := openIndex(t, dir)
	t.Cleanup(func() { ix.Close() })
	if !ix.NeedsRebuild() {
		t.Fatal("a deleted index does not ask for a rebuild")
	}
	h.opt.Memory = MemoryOf(config.Default().Memory, ix)
	h.start() // rebuilds in the background
	// Done when the background rebuild has let go too, or the reindex below finds it busy.
	if !testutil.Wait(10*time.Second, func() bool {
		return !ix.NeedsRebuild() && ix.Stats().Docs == 50 && !h.sup.memoryService.mem.rebuilding.Load()
	}) {
		t.Fatalf("not rebuilt: %+v", ix.Stats())
	}
	hits, err := h.sup.memoryService.SearchMemory(ctx, api.MemorySearchRequest{Agent: "mind", Query: "aurora", K: 100})
	if err != nil || len(hits) != 50 {
		t.Fatalf("search after rebuild = %d hits, %v; want 50", len(hits), err)
	}
	st, err := h.sup.memoryService.ReindexMemory(ctx)
	if err != nil || st.Memories != 50 || st.Indexed != 50 || st.NeedsRebuild {
		t.Fatalf("reindex = %+v, %v", st, err)
	}
}

func TestMemoryServiceRefusesBadInput(t *testing.T) {
	h := newHarness(t, withMemory(t))
	off := newHarness(t)
	ctx := context.Background()
	h.create(api.CreateAgentRequest{Name: "ann", Description: "d", Goals: []string{"g"}, Start: new(bool)})
	tests := []struct {
		name string
		call func() error
		kind error
		msg  string
	}{
		{"empty_text", func() error {
			_, err := h.sup.memoryService.AddMemory(ctx, api.MemoryAddRequest{Text: "  "})
			return err
		},
			api.ErrBadRequest, "empty memory text"},
		{"bad_kind", func() error {
			_, err := h.sup.memoryService.AddMemory(ctx, api.MemoryAddRequest{Text: "x", Kind: "gossip"})
			return err
		}, api.ErrBadRequest, `memory kind "gossip": use one of episode, result, feedback, note, chat, file`},
		{"huge_text", func() error {
			_, err := h.sup.memoryService.AddMemory(ctx, api.MemoryAddRequest{Text: strings.Repeat("x", 9000)})
			return err
		}, api.ErrBadRequest, "memory text is 9000 bytes: at most 8000"},
		{"unknown_agent", func() error {
			_, err := h.sup.memoryService.AddMemory(ctx, api.MemoryAddRequest{Agent: "bob", Text: "x"})
			return err
		}, api.ErrNotFound, `no agent "bob"`},
		{"empty_query", func() error {
			_, err := h.sup.memoryService.SearchMemory(ctx, api.MemorySearchRequest{})
			return err
		},
			api.ErrBadRequest, "empty query"},
		{"search_bad_kind", func() error {
			_, err := h.sup.memoryService.SearchMemory(ctx, api.MemorySearchRequest{Query: "x", Kinds: []string{"episode", "dream"}})
			return err
		}, api.ErrBadRequest, `memory kind "dream"`},
		{"k_too_big", func() error {
			_, err := h.sup.memoryService.SearchMemory(ctx, api.MemorySearchRequest{Query: "x", K: 1000})
			return err
		}, api.ErrBadRequest, "k = 1000"},
		{"ls_bad_limit", func() error {
			_, err := h.sup.memoryService.Memories(ctx, api.MemoryListRequest{Limit: -1})
			return err
		},
			api.ErrBadRequest, "limit = -1"},
		{"rm_unknown", func() error { return h.sup.memoryService.DeleteMemory(ctx, "m-nope") }, api.ErrNotFound, `no memory "m-nope"`},
		{"memory_off", func() error { _, err := off.sup.memoryService.MemoryStats(ctx); return err }, api.ErrConflict, "long-term memory is off"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			var ce *api.Error
			if !errors.As(err, &ce) || ce.Kind != tt.kind || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("err = %v; want a %v error containing %q", err, tt.kind, tt.msg)
			}
		})
	}
	// A shared note added twice is one memory; a bad byte in it is replaced, not refused.
	for range 2 {
		if _, err := h.sup.memoryService.AddMemory(ctx, api.MemoryAddRequest{Text: "bad \xff byte"}); err != nil {
			t.Fatal(err)
		}
	}
	list, err := h.sup.memoryService.Memories(ctx, api.MemoryListRequest{})
	if err != nil || len(list) != 1 || list[0].Text != "bad \uFFFD byte" {
		t.Fatalf("list = %+v, %v", list, err)
	}
}

func TestChunkText(t *testing.T) {
	long := strings.Repeat("line of text\n", 300) // 3,900 bytes
	chunks := chunkText(long, 1500, 64)
	if len(chunks) != 3 || strings.Join(chunks, "") != long {
		t.Fatalf("%d chunks that join to the input: %v", len(chunks), strings.Join(chunks, "") == long)
	}
	for _, c := range chunks {
		if len(c) > 1500 || !strings.HasSuffix(c, "\n") {
			t.Errorf("chunk of %d bytes not cut at a line end", len(c))
		}
	}
	runes := strings.Repeat("é", 1000) // no line ends: cut on rune boundaries
	for _, c := range chunkText(runes, 1501, 64) {
		if !strings.HasPrefix(c, "é") || len(c)%2 != 0 {
			t.Errorf("chunk cut inside a rune: %d bytes", len(c))
		}
	}
	if n := len(chunkText(strings.Repeat("x", 100000), 1500, 64)); n != 64 {
		t.Errorf("huge text made %d chunks, want the cap of 64", n)
	}
}

// summaryOrStep answers summary requests with one line per step, and proposes a new
// write_file (so the watchdog never sees a loop) otherwise.
func summaryOrStep(summaries *atomic.Int64) func(*ollama.ChatRequest) (string, error) {
	return func(req *ollama.ChatRequest) (string, error) {
		var schema commands.Schema
		if json.Unmarshal(req.Format, &schema) == nil {
			if p := schema.Properties.Get("lines"); p != nil {
				summaries.Add(1)
				lines := make([]string, *p.MinItems)
				for i := range lines {
					lines[i] = fmt.Sprintf("summarized step %d", i+1)
				}
				b, _ := json.Marshal(map[string]any{"lines": lines})
				return string(b), nil
			}
		}
		return nextWrite(), nil
	}
}

// writes numbers the files nextWrite proposes.
var writes atomic.Int64

// nextWrite is a cheap step that is never a loop: a write of a file not written before.
func nextWrite() string {
	n := writes.Add(1)
	return reply("write_file", map[string]string{"path": fmt.Sprint(n), "contents": "x"})
}

// fakePromptTokens counts a request's prompt the way the fake does, without its cap at
// num_ctx: the assembled prompt itself must fit.
func fakePromptTokens(msgs []ollama.Message) int {
	n := 1
	for _, m := range msgs {
		n += 4
		if m.Content != "" {
			n += len(m.Content)/4 + 1
		}
	}
	return n
}

// TestLongLivedAgentStaysInContext runs an agent with 1,000 episodes and 5,000 memories
// behind it on a 2,048-token model for 64 steps: every prompt fits num_ctx, the older
// steps get model-made summaries, and the model calls per step stay within 1.2.
func TestLongLivedAgentStaysInContext(t *testing.T) {
	if testing.Short() {
		t.Skip("long run")
	}
	var summaries atomic.Int64
	h := newHarness(t, withMemory(t))
	h.stop()
	h.fake.SetContextLength(2048)
	h.fake.OnChat(summaryOrStep(&summaries))
	a := h.create(api.CreateAgentRequest{Name: "old", Description: benchDescription, Goals: benchGoals, Start: new(bool),
		Policy: &api.Policy{Mode: "continuous", ContinuousLimit: 1 << 30}})
	seedHistory(t, h.st, a, 1000)
	seedMemories(t, h.st, h.opt.Memory.Index, a.ID, 5000)
	if _, err := h.sup.runs.Task(context.Background(), a.ID, "Keep the notes folder tidy and summarize every note"); err != nil {
		t.Fatal(err)
	}
	h.start()
	const steps = 64
	h.waitSteps(a.ID, steps)
	h.stop()

	reqs := h.fake.Requests()
	calls := 0
	for _, r := range reqs {
		if r.Model == "" {
			continue
		}
		calls++
		numCtx := int(r.Options["num_ctx"].(float64))
		if got := fakePromptTokens(r.Messages); got > numCtx {
			t.Errorf("a prompt of %d tokens exceeds num_ctx %d", got, numCtx)
		}
	}
	got, _ := h.sup.agentViews.Agent(context.Background(), a.ID)
	perStep := float64(calls) / float64(got.Step)
	t.Logf("%d steps, %d model calls (%d for summaries): %.3f calls per step", got.Step, calls, summaries.Load(), perStep)
	if perStep > 1.2 {
		t.Errorf("%.3f model calls per step, over 1.2", perStep)
	}
	if summaries.Load() == 0 {
		t.Error("no summaries were made")
	}
	var last string // the last step's prompt: summaries are made beside the steps
	for i := len(reqs) - 1; i >= 0 && last == ""; i-- {
		if !bytes.Contains(reqs[i].Format, []byte(`"lines"`)) {
			last = joinContent(reqs[i].Messages)
		}
	}
	if !strings.Contains(last, ": summarized step") || !strings.Contains(last, "Relevant memories") {
		t.Errorf("the last prompt shows no summaries or no memories:\n%s", last)
	}
}

// seedMemories stores n memories for the agent and indexes them. Their words follow a
// Zipf law over a 20,000-word vocabulary whose head is the agents' everyday words (notes,
// folder, files, list…), as real memories do: a few words in most of them, a long tail
// of names and rare words. (A corpus of a handful of words, each in every other memory,
// would make every search score half the index, which no agent's memory looks like.)
func seedMemories(tb testing.TB, st *store.Store, ix *memory.Index, agentID string, n int) {
	tb.Helper()
	vocab := strings.Fields("notes folder tidy summary archive invoice meeting budget draft report list files " +
		"photo recipe garden travel music deadline review contract backup server the a to of and in is it for on")
	r := rand.New(rand.NewPCG(7, 42))
	syl := strings.Fields("ka lo mir ten sa vu rex dal po zin fe qua tor bi nel gos ha jup ri wen")
	for len(vocab) < 20000 {
		var w strings.Builder
		for range 2 + r.IntN(3) {
			w.WriteString(syl[r.IntN(len(syl))])
		}
		vocab = append(vocab, w.String())
	}
	zipf := rand.NewZipf(r, 1.07, 2, uint64(len(vocab)-1))
	text := func(i int) string {
		words := make([]string, 8+r.IntN(25))
		for j := range words {
			words[j] = vocab[zipf.Uint64()]
		}
		return fmt.Sprintf("note %d: %s", i, strings.Join(words, " "))
	}
	var docs []memory.Doc
	err := st.Tx(context.Background(), func(tx *store.Tx) error {
		for i := range n {
			m := store.Memory{ID: fmt.Sprintf("m-seed-%06d", i), AgentID: agentID, Kind: "note",
				Text: text(i)}
			if err := tx.InsertMemory(&m); err != nil {
				return err
			}
			docs = append(docs, toDoc(m))
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	for len(docs) > 0 { // in parts the indexing queue holds
		part := docs[:min(len(docs), 10_000)]
		docs = docs[len(part):]
		if err := ix.Add(part...); err != nil {
			tb.Fatal(err)
		}
		flush(tb, ix)
	}
}

// The memory search each prompt makes is started while the previous step's result is
// recorded (memory_state.go): every prompt after a result takes it, so the search ahead
// was made with exactly the query the prompt would have searched (a result longer than the
// store keeps included), and the finish starts none. An agent whose prompt has no memory
// component starts none at all.
func TestPromptTakesTheSearchAhead(t *testing.T) {
	for _, c := range []struct {
		name                string
		disabled            []string
		missed, usedOrStale int64
	}{
		{name: "memory_component", missed: 1, usedOrStale: 3}, // the first prompt has no step before it
		{name: "memory_component_disabled", disabled: []string{memoryName}},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, withMemory(t), func(o *Options) { o.DisabledComponents = c.disabled })
			long := strings.Repeat("é", 450) // a result over resultCut characters, and over 300 bytes
			replies := []string{
				reply("write_file", map[string]string{"path": "notes.txt", "contents": long}),
				reply("read_file", map[string]string{"path": "notes.txt"}),
				reply("list_folder", map[string]string{"path": "."}),
				reply("finish", map[string]string{"reason": "done"}),
			}
			var n atomic.Int32
			h.fake.OnChat(func(*ollama.ChatRequest) (string, error) {
				return replies[min(int(n.Add(1))-1, len(replies)-1)], nil
			})
			a := h.create(api.CreateAgentRequest{Name: "reader", Description: "reads notes", Task: "Read the notes",
				Policy: &api.Policy{Mode: "auto", AutoSteps: 10}})
			h.waitFor(a.ID, "idle", func(a *api.Agent) bool { return a.State == api.StateIdle })
			ahead := &h.sup.mem.ahead
			if got := ahead.missed.Load(); got != c.missed {
				t.Errorf("prompts without a search ahead for their query = %d, want %d", got, c.missed)
			}
			// A search ahead older than aheadMaxAge (a slow machine) is searched again.
			if got := ahead.used.Load() + ahead.stale.Load(); got != c.usedOrStale {
				t.Errorf("prompts that found their search ahead = %d (used %d), want %d", got, ahead.used.Load(), c.usedOrStale)
			}
			ahead.mu.Lock()
			left := ahead.m[a.ID]
			ahead.mu.Unlock()
			if left != nil {
				t.Error("a search ahead is left unused after the run finished")
			}
		})
	}
}
