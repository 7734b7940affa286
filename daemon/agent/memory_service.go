package agent

import (
	"context"
	"errors"
	"strings"

	"github.com/agentd/agentd/daemon/client"
	"github.com/agentd/agentd/daemon/store"
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

func wireMemory(m store.Memory, names map[string]string) client.Memory {
	return client.Memory{ID: m.ID, AgentID: m.AgentID, Agent: names[m.AgentID], Kind: m.Kind, Text: m.Text,
		Source: m.Source, CreatedAt: m.Created}
}

func checkKind(kind string) error {
	if !memory.Kind(kind).Valid() {
		return badRequest("memory kind %q: use one of %s", kind, strings.Join(client.MemoryKinds, ", "))
	}
	return nil
}

// AddMemory saves a memory for an agent, or a shared one.
func (s *Supervisor) AddMemory(ctx context.Context, req client.MemoryAddRequest) (*client.Memory, error) {
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
	}
	if err := checkKind(req.Kind); err != nil {
		return nil, err
	}
	var out client.Memory
	err := s.st.Tx(ctx, func(tx *store.Tx) error {
		id, err := agentRef(tx, req.Agent)
		if err != nil {
			return err
		}
		m := store.Memory{ID: newID("m-"), AgentID: id, Kind: req.Kind, Text: req.Text, Source: req.Source}
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

// SearchMemory finds the memories most relevant to a query, with their scores.
func (s *Supervisor) SearchMemory(ctx context.Context, req client.MemorySearchRequest) ([]client.Memory, error) {
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
	hits, err := s.mem.ix.Search(ctx, q)
	if err != nil {
		return nil, err
	}
	out := make([]client.Memory, len(hits))
	for i, h := range hits {
		out[i] = client.Memory{ID: h.ID, AgentID: h.Agent, Agent: names[h.Agent], Kind: string(h.Kind), Text: h.Text,
			Source: h.Source, CreatedAt: h.Created, Score: h.Score, BM25: h.BM25, Similarity: h.Similarity}
	}
	return out, nil
}

// Memories lists memories, newest first: an agent's own and the shared ones, or all.
func (s *Supervisor) Memories(ctx context.Context, req client.MemoryListRequest) ([]client.Memory, error) {
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
	out := []client.Memory{}
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
func (s *Supervisor) DeleteMemory(ctx context.Context, id string) error {
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
func (s *Supervisor) ReindexMemory(ctx context.Context) (*client.MemoryStats, error) {
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
func (s *Supervisor) MemoryStats(ctx context.Context) (*client.MemoryStats, error) {
	if s.mem == nil {
		return nil, errMemoryOff()
	}
	ix := s.mem.ix.Stats()
	out := &client.MemoryStats{
		Indexed: ix.Docs, Vectors: ix.Vectors, Queued: ix.Queued, Generation: ix.Generation,
		EmbedModel: s.mem.opt.EmbedModel, EmbedFailures: ix.EmbedFailures, Dropped: ix.Dropped,
		NeedsRebuild: ix.NeedsRebuild, RebuildReason: ix.RebuildReason, Rebuilding: s.mem.rebuilding.Load(),
	}
	err := s.st.View(ctx, func(tx *store.Tx) (err error) { out.Memories, err = tx.CountMemories(); return err })
	return out, err
}
