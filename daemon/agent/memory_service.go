package agent

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/daemon/store"
	"github.com/agentd/agentd/internal/randid"
	"github.com/agentd/agentd/memory"
)

// The local API's memory endpoints: agentctl memory add|search|ls|rm|reindex.

// errMemoryOff answers every memory call when long-term memory is off.
func errMemoryOff() error {
	return conflict("long-term memory is off: set [memory] enabled = true in agentd's config and restart it")
}

// agentRef resolves an optional agent reference to its id ("" for none).
func agentRef(tx *store.Tx, ref string) (string, error) {
	if strings.TrimSpace(ref) == "" {
		return "", nil
	}
	a, err := resolve(tx, ref)
	if err != nil {
		return "", err
	}
	return a.ID, nil
}

// agentNames maps agent ids to names, for showing memories.
func agentNames(tx *store.Tx) (map[string]string, error) {
	agents, err := tx.Agents()
	names := map[string]string{}
	for _, a := range agents {
		names[a.ID] = a.Name
	}
	return names, err
}

func wireMemory(m store.Memory, names map[string]string) api.Memory {
	return api.Memory{ID: m.ID, AgentID: m.AgentID, Agent: names[m.AgentID], Kind: m.Kind, Text: m.Text,
		Source: m.Source, Speaker: m.Speaker, CreatedAt: m.Created, Tags: m.Tags}
}

func checkKind(kind string) error {
	if !memory.Kind(kind).Valid() {
		return badRequest("memory kind %q: use one of %s", kind, strings.Join(api.MemoryKinds, ", "))
	}
	return nil
}

// AddMemory saves a memory for an agent, or a shared one.
func (s *memoryService) AddMemory(ctx context.Context, req api.MemoryAddRequest) (*api.Memory, error) {
	if s.mem == nil {
		return nil, errMemoryOff()
	}
	req.Text = strings.TrimSpace(req.Text)
	if req.Kind == "" {
		req.Kind = string(memory.KindNote)
	}
	switch {
	case req.Text == "":
		return nil, badRequest("empty memory text: give the text to remember")
	case len(req.Text) > maxMemoryText:
		return nil, badRequest("memory text is %d bytes: at most %d", len(req.Text), maxMemoryText)
	case len(req.Source) > 1024:
		return nil, badRequest("memory source is %d bytes: at most 1024", len(req.Source))
	case len(req.Speaker) > 256:
		return nil, badRequest("memory speaker is %d bytes: at most 256 (a person's name)", len(req.Speaker))
	case len(req.Context) > maxMemoryText:
		return nil, badRequest("memory context is %d bytes: at most %d (keep the end of the turn before)", len(req.Context), maxMemoryText)
	}
	if err := checkKind(req.Kind); err != nil {
		return nil, err
	}
	var out api.Memory
	err := s.st.Tx(ctx, func(tx *store.Tx) error {
		id, err := agentRef(tx, req.Agent)
		if err != nil {
			return err
		}
		m := store.Memory{ID: randid.ID("m-"), AgentID: id, Kind: req.Kind, Text: req.Text, Source: req.Source,
			Speaker: cleanText(strings.TrimSpace(req.Speaker)), Context: cleanText(strings.TrimSpace(req.Context))}
		if req.Kind == string(memory.KindNote) {
			m.ID = noteID(id, req.Text)
		}
		if err := s.remember(tx, m); err != nil {
			return err
		}
		m.Text = cleanText(m.Text)
		names, err := agentNames(tx)
		if err != nil {
			return err
		}
		out = wireMemory(m, names)
		out.CreatedAt = tx.Now()
		return tx.Audit(id, "memory_added", map[string]string{"memory": m.ID, "kind": m.Kind})
	})
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// searchFlushWait bounds how long a search waits for the memories queued before it to
// be indexed.
const searchFlushWait = 3 * time.Second

// SearchMemory finds the memories most relevant to a query, with their scores, the
// memories written before it included (see searchFlushWait).
func (s *memoryService) SearchMemory(ctx context.Context, req api.MemorySearchRequest) ([]api.Memory, error) {
	if s.mem == nil {
		return nil, errMemoryOff()
	}
	if strings.TrimSpace(req.Query) == "" {
		return nil, badRequest("empty query: give the words to search for")
	}
	if req.K < 0 || req.K > 100 {
		return nil, badRequest("k = %d: want 1 to 100 results (0 means %d)", req.K, memory.DefaultK)
	}
	q := memory.Query{Text: req.Query, K: req.K, HalfLife: s.mem.opt.HalfLife, AllAgents: req.Agent == ""}
	for _, k := range req.Kinds {
		if err := checkKind(k); err != nil {
			return nil, err
		}
		q.Kinds = append(q.Kinds, memory.Kind(k))
	}
	var names map[string]string
	err := s.st.View(ctx, func(tx *store.Tx) (err error) {
		if q.Agent, err = agentRef(tx, req.Agent); err != nil {
			return err
		}
		names, err = agentNames(tx)
		return err
	})
	if err != nil {
		return nil, err
	}
	// A person's own write just before is found: the index batches writes for a while
	// (IndexBatchDelay), so wait, bounded, for it to take what is queued. When that takes
	// longer (a big import, a rebuild), agentctl says indexing is still going on.
	fctx, cancel := context.WithTimeout(ctx, searchFlushWait)
	err = s.mem.ix.Flush(fctx)
	cancel()
	if err != nil && ctx.Err() != nil {
		return nil, ctx.Err()
	}
	hits, err := s.mem.ix.Search(ctx, q)
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(hits))
	for i, h := range hits {
		ids[i] = h.ID
	}
	var tags map[string][]string // the index keeps no tags
	if err := s.st.View(ctx, func(tx *store.Tx) (err error) { tags, err = tx.MemoryTags(ids); return err }); err != nil {
		return nil, err
	}
	out := make([]api.Memory, len(hits))
	for i, h := range hits {
		out[i] = api.Memory{ID: h.ID, AgentID: h.Agent, Agent: names[h.Agent], Kind: string(h.Kind), Text: h.Text,
			Source: h.Source, Speaker: h.Speaker, CreatedAt: h.Created, Score: h.Score, BM25: h.BM25, Similarity: h.Similarity,
			Tags: tags[h.ID], Why: whyMatched(memory.Explain(req.Query, h))}
	}
	return out, nil
}

// Memories lists memories, newest first: an agent's own and the shared ones, or all.
func (s *memoryService) Memories(ctx context.Context, req api.MemoryListRequest) ([]api.Memory, error) {
	if s.mem == nil {
		return nil, errMemoryOff()
	}
	if req.Kind != "" {
		if err := checkKind(req.Kind); err != nil {
			return nil, err
		}
	}
	if req.Limit < 0 || req.Limit > 1000 {
		return nil, badRequest("limit = %d: want 1 to 1000 (0 means 50)", req.Limit)
	}
	if req.Limit == 0 {
		req.Limit = 50
	}
	out := []api.Memory{}
	err := s.st.View(ctx, func(tx *store.Tx) error {
		id, err := agentRef(tx, req.Agent)
		if err != nil {
			return err
		}
		ms, err := tx.Memories(store.MemoryFilter{AgentID: id, AllAgents: req.Agent == "", Kind: req.Kind, Limit: req.Limit})
		if err != nil {
			return err
		}
		names, err := agentNames(tx)
		for _, m := range ms {
			out = append(out, wireMemory(m, names))
		}
		return err
	})
	return out, err
}

// DeleteMemory removes one memory from the store and the index.
func (s *memoryService) DeleteMemory(ctx context.Context, id string) error {
	if s.mem == nil {
		return errMemoryOff()
	}
	if strings.TrimSpace(id) == "" {
		return badRequest("no memory id: see agentctl memory ls")
	}
	return s.st.Tx(ctx, func(tx *store.Tx) error {
		ok, err := tx.DeleteMemory(id)
		if err != nil {
			return err
		}
		if !ok {
			return notFound("no memory %q: see agentctl memory ls", id)
		}
		s.forget(tx, []string{id})
		return tx.Audit("", "memory_removed", map[string]string{"memory": id})
	})
}

// ReindexMemory rebuilds the index from the store into a new generation and swaps it in;
// searches go on meanwhile. It returns when the new index is live.
func (s *memoryService) ReindexMemory(ctx context.Context) (*api.MemoryStats, error) {
	if s.mem == nil {
		return nil, errMemoryOff()
	}
	if !s.mem.rebuilding.CompareAndSwap(false, true) {
		return nil, conflict("the memory index is being rebuilt already: see agentctl memory stats")
	}
	err := s.rebuildMemory(ctx)
	s.mem.rebuilding.Store(false)
	if errors.Is(err, memory.ErrRebuildRunning) {
		return nil, conflict("the memory index is being rebuilt already: see agentctl memory stats")
	}
	if err != nil {
		return nil, err
	}
	return s.MemoryStats(ctx)
}

// MemoryStats describes the index and the store's memories.
func (s *memoryService) MemoryStats(ctx context.Context) (*api.MemoryStats, error) {
	if s.mem == nil {
		return nil, errMemoryOff()
	}
	ix := s.mem.ix.Stats()
	out := &api.MemoryStats{
		Indexed: ix.Docs, Vectors: ix.Vectors, Queued: ix.Queued, Generation: ix.Generation,
		EmbedModel: s.mem.opt.EmbedModel, EmbedFailures: ix.EmbedFailures, Dropped: ix.Dropped,
		NeedsRebuild: ix.NeedsRebuild, RebuildReason: ix.RebuildReason, Rebuilding: s.mem.rebuilding.Load(),
	}
	err := s.st.View(ctx, func(tx *store.Tx) (err error) {
		if out.Memories, err = tx.CountMemories(); err != nil {
			return err
		}
		out.Agents, err = agentMemoryStats(tx)
		return err
	})
	return out, err
}

// memoryService owns long-term memory for the supervisor: what steps and the API write to
// it, the index kept in step with the store, and the local API's memory endpoints.
type memoryService struct {
	st  *store.Store
	log *slog.Logger
	mem *memState // nil: no long-term memory
	// spawn runs fn in a goroutine the supervisor tracks, under its root context; false
	// when the daemon is not running (not started yet, or stopping).
	spawn func(fn func(ctx context.Context)) bool
}

// remember stores memories in tx and indexes them once tx commits. Without memory it
// does nothing.
func (s *memoryService) remember(tx *store.Tx, ms ...store.Memory) error {
	if s.mem == nil || len(ms) == 0 {
		return nil
	}
	docs := make([]memory.Doc, 0, len(ms))
	for i := range ms {
		ms[i].Text = cleanText(ms[i].Text)
		if err := tx.InsertMemory(&ms[i]); err != nil {
			return err
		}
		docs = append(docs, toDoc(ms[i]))
	}
	tx.AfterCommit(func() { s.indexed(s.mem.ix.Add(docs...)) })
	return nil
}

// forget removes memories from the index once tx (which deleted them) commits.
func (s *memoryService) forget(tx *store.Tx, ids []string) {
	if s.mem == nil || len(ids) == 0 {
		return
	}
	tx.AfterCommit(func() { s.indexed(s.mem.ix.Delete(ids...)) })
}

// indexed handles the index refusing work: a full queue dropped memories that are safe in
// the store, so a rebuild brings them back.
func (s *memoryService) indexed(err error) {
	switch {
	case err == nil:
	case errors.Is(err, memory.ErrQueueFull):
		s.rebuildInBackground("the indexing queue was full")
	default:
		s.log.Warn("memory: indexing refused", "err", err)
	}
}

// rebuildInBackground rebuilds the index from the store while the daemon serves, unless a
// rebuild is running already.
func (s *memoryService) rebuildInBackground(reason string) {
	if s.mem == nil || !s.mem.rebuilding.CompareAndSwap(false, true) {
		return
	}
	started := s.spawn(func(ctx context.Context) {
		defer s.mem.rebuilding.Store(false)
		s.log.Info("memory: rebuilding the index from the store in the background", "reason", reason)
		start := time.Now()
		if err := s.rebuildMemory(ctx); err != nil {
			if ctx.Err() == nil {
				s.log.Error("memory: rebuild failed; search uses the index as it is", "err", err)
			}
			return
		}
		s.log.Info("memory: index rebuilt", "memories", s.mem.ix.Stats().Docs, "took", time.Since(start).Round(time.Millisecond))
	})
	if !started {
		s.mem.rebuilding.Store(false)
	}
}

// rebuildMemory builds a new index generation from the memories table and swaps it in.
// It reads the table in pages, each a short transaction, so the agents' writes go on;
// what they write meanwhile the index replays into the new generation.
func (s *memoryService) rebuildMemory(ctx context.Context) error {
	return s.mem.ix.Rebuild(ctx, func(yield func(memory.Doc) error) error {
		after := ""
		for {
			var page []store.Memory
			if err := s.st.View(ctx, func(tx *store.Tx) (err error) {
				page, err = tx.MemoryPage(after, memoryPage)
				return err
			}); err != nil {
				return err
			}
			for _, m := range page {
				if err := yield(toDoc(m)); err != nil {
					return err
				}
			}
			if len(page) < memoryPage {
				return nil
			}
			after = page[len(page)-1].ID
		}
	})
}
