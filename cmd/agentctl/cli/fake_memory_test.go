package cli_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"

	"github.com/agentd/agentd/daemon/client"
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
	return nil, &httpError{http.StatusNotFound, fmt.Sprintf("no agent %q", ref)}
}

func (f *fakeDaemon) memories(r *http.Request) (any, error) {
	if _, err := f.memoryAgent(r.URL.Query().Get("agent")); err != nil {
		return nil, err
	}
	return cannedMemories(), nil
}

func (f *fakeDaemon) searchMemory(r *http.Request) (any, error) {
	var req client.MemorySearchRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		return nil, &httpError{http.StatusBadRequest, err.Error()}
	}
	if _, err := f.memoryAgent(req.Agent); err != nil {
		return nil, err
	}
	for _, k := range req.Kinds {
		if !slices.Contains(client.MemoryKinds, k) {
			return nil, &httpError{http.StatusBadRequest, fmt.Sprintf("memory kind %q: use one of episode, result, feedback, note, chat, file", k)}
		}
	}
	if req.Query == "nothing" {
		return []client.Memory{}, nil
	}
	return cannedMemories(), nil
}

func (f *fakeDaemon) addMemory(r *http.Request) (any, error) {
	var req client.MemoryAddRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		return nil, &httpError{http.StatusBadRequest, err.Error()}
	}
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
	return m, nil
}
