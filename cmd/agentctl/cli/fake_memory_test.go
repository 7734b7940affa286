package cli_test

import (
	"context"
	"slices"

	"github.com/agentd/agentd/daemon/client"
	"github.com/agentd/agentd/daemon/client/clienttest"
)

// The fake daemon's memory routes: two canned memories, an agent filter, and the kind and
// agent checks the daemon makes.

func cannedMemories() []client.Memory {
	return []client.Memory{
		{ID: "m-1", AgentID: "a-1", Agent: "researcher", Kind: "note", Text: "The survey by Geng et al. (2023) is the best overview of grammar-constrained decoding.",
			Source: "memory_add", CreatedAt: fixedTime, Score: 4.2, BM25: 4.2},
		{ID: "m-2", Kind: "feedback", Text: "Cite papers with their arXiv id.", Source: "ann", CreatedAt: fixedTime, Score: 1.5, BM25: 1.5},
	}
}

func cannedMemoryStats() client.MemoryStats {
	return client.MemoryStats{Memories: 1204, Indexed: 1200, Queued: 4, Generation: "gen-000003",
		EmbedModel: "nomic-embed-text", Vectors: 1198, EmbedFailures: 2}
}

func (f *fakeDaemon) memoryAgent(ref string) (*client.Agent, error) {
	if ref == "" {
		return nil, nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, a := range f.agents {
		if a.ID == ref || a.Name == ref {
			return a, nil
		}
	}
	return nil, client.Errorf(client.ErrNotFound, "no agent %q", ref)
}

// memoryRoutes sets the memory routes of the fake daemon's api.
func (f *fakeDaemon) memoryRoutes() {
	fk := &f.api
	clienttest.Handle(fk, client.MemoriesRoute, func(_ context.Context, _ string, req client.MemoryListRequest) ([]client.Memory, error) {
		if _, err := f.memoryAgent(req.Agent); err != nil {
			return nil, err
		}
		return cannedMemories(), nil
	})
	clienttest.Handle(fk, client.SearchMemoryRoute, func(_ context.Context, _ string, req client.MemorySearchRequest) ([]client.Memory, error) {
		if _, err := f.memoryAgent(req.Agent); err != nil {
			return nil, err
		}
		for _, k := range req.Kinds {
			if !slices.Contains(client.MemoryKinds, k) {
				return nil, client.Errorf(client.ErrBadRequest, "memory kind %q: use one of episode, result, feedback, note, chat, file", k)
			}
		}
		if req.Query == "nothing" {
			return []client.Memory{}, nil
		}
		return cannedMemories(), nil
	})
	clienttest.Handle(fk, client.AddMemoryRoute, func(_ context.Context, _ string, req client.MemoryAddRequest) (*client.Memory, error) {
		a, err := f.memoryAgent(req.Agent)
		if err != nil {
			return nil, err
		}
		if req.Kind == "" {
			req.Kind = "note"
		}
		m := client.Memory{ID: "m-3", Kind: req.Kind, Text: req.Text, Source: req.Source, CreatedAt: fixedTime}
		if a != nil {
			m.AgentID, m.Agent = a.ID, a.Name
		}
		return &m, nil
	})
	clienttest.Handle(fk, client.DeleteMemoryRoute, func(_ context.Context, id string, _ client.None) (client.None, error) {
		if id != "m-1" {
			return client.None{}, client.Errorf(client.ErrNotFound, "no memory %q: see agentctl memory ls", id)
		}
		return client.None{}, nil
	})
	stats := func(context.Context, string, client.None) (*client.MemoryStats, error) {
		st := cannedMemoryStats()
		return &st, nil
	}
	clienttest.Handle(fk, client.MemoryStatsRoute, stats)
	clienttest.Handle(fk, client.ReindexMemoryRoute, stats)
}
