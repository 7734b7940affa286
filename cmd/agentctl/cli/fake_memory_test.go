package cli_test

import (
	"cmp"
	"context"
	"slices"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/internal/apitest"
)

// The fake daemon's memory routes: two canned memories, an agent filter, and the kind and
// agent checks the daemon makes.

func cannedMemories() []api.Memory {
	return []api.Memory{
		{ID: "m-1", AgentID: "a-1", Agent: "researcher", Kind: "note", Text: "The survey by Geng et al. (2023) is the best overview of grammar-constrained decoding.",
			Source: "memory_add", CreatedAt: fixedTime, Score: 4.2, BM25: 4.2, Tags: []string{"papers"},
			Why: &api.MemoryMatch{Words: []string{"grammar", "decoding"}, Fields: []string{"text"}, Date: "2026-11-21"}},
		{ID: "m-2", Kind: "feedback", Text: "Cite papers with their arXiv id.", Source: "ann", CreatedAt: fixedTime, Score: 1.5, BM25: 1.5,
			Why: &api.MemoryMatch{Similar: true}},
	}
}

func cannedMemoryStats() api.MemoryStats {
	return api.MemoryStats{Memories: 1204, Indexed: 1200, Queued: 4, Generation: "gen-000003",
		EmbedModel: "nomic-embed-text", Vectors: 1198, EmbedFailures: 2, Agents: []api.MemoryAgentStats{
			{AgentID: "a-1", Agent: "researcher", Count: 1200, Bytes: 1_342_177, Oldest: fixedTime.AddDate(0, -3, 0), Newest: fixedTime,
				Kinds: map[string]int{"episode": 900, "note": 280, "file": 20}},
			{Count: 4, Bytes: 512, Oldest: fixedTime.AddDate(0, 0, -2), Newest: fixedTime, Kinds: map[string]int{"feedback": 4}},
		}}
}

func (f *fakeDaemon) memoryAgent(ref string) (*api.Agent, error) {
	if ref == "" {
		return nil, nil
	}
	return f.agent(ref)
}

// memoryRoutes sets the memory routes of the fake daemon's api.
func (f *fakeDaemon) memoryRoutes() {
	fk := &f.api
	apitest.Handle(fk, api.MemoriesRoute, func(_ context.Context, _ string, req api.MemoryListRequest) ([]api.Memory, error) {
		if _, err := f.memoryAgent(req.Agent); err != nil {
			return nil, err
		}
		return cannedMemories(), nil
	})
	apitest.Handle(fk, api.SearchMemoryRoute, func(_ context.Context, _ string, req api.MemorySearchRequest) ([]api.Memory, error) {
		if _, err := f.memoryAgent(req.Agent); err != nil {
			return nil, err
		}
		for _, k := range req.Kinds {
			if !slices.Contains(api.MemoryKinds, k) {
				return nil, api.Errorf(api.ErrBadRequest, "memory kind %q: use one of episode, result, feedback, note, chat, file", k)
			}
		}
		if req.Query == "nothing" {
			return []api.Memory{}, nil
		}
		return cannedMemories(), nil
	})
	apitest.Handle(fk, api.AddMemoryRoute, func(_ context.Context, _ string, req api.MemoryAddRequest) (*api.Memory, error) {
		a, err := f.memoryAgent(req.Agent)
		if err != nil {
			return nil, err
		}
		if req.Kind == "" {
			req.Kind = "note"
		}
		m := api.Memory{ID: "m-3", Kind: req.Kind, Text: req.Text, Source: req.Source, Speaker: req.Speaker, CreatedAt: fixedTime}
		if a != nil {
			m.AgentID, m.Agent = a.ID, a.Name
		}
		return &m, nil
	})
	apitest.Handle(fk, api.DeleteMemoryRoute, func(_ context.Context, id string, _ api.None) (api.None, error) {
		if id != "m-1" {
			return api.None{}, api.Errorf(api.ErrNotFound, "no memory %q: see agentctl memory ls", id)
		}
		return api.None{}, nil
	})
	stats := func(context.Context, string, api.None) (*api.MemoryStats, error) {
		st := cannedMemoryStats()
		return &st, nil
	}
	apitest.Handle(fk, api.MemoryStatsRoute, stats)
	apitest.Handle(fk, api.ReindexMemoryRoute, stats)
	f.memoryIORoutes()
}

// memoryIORoutes are import and export as the daemon serves them: a batch is checked whole
// (records, lines, agents) and stored all or none; export pages in id order.
func (f *fakeDaemon) memoryIORoutes() {
	fk := &f.api
	apitest.Handle(fk, api.ImportMemoryRoute, func(_ context.Context, _ string, req api.MemoryImportRequest) (*api.MemoryImportResult, error) {
		if len(req.Records) == 0 || len(req.Records) > api.MemoryImportBatchMax || (len(req.Lines) > 0 && len(req.Lines) != len(req.Records)) {
			return nil, api.Errorf(api.ErrBadRequest, "%d records, %d lines: want 1 to %d records, each with its line", len(req.Records), len(req.Lines), api.MemoryImportBatchMax)
		}
		for i, r := range req.Records {
			line := i + 1
			if len(req.Lines) > 0 {
				line = req.Lines[i]
			}
			if err := r.Check(); err != nil {
				return nil, api.Errorf(api.ErrBadRequest, "line %d: %v", line, err)
			}
			if ref := cmp.Or(r.Agent, req.Agent); ref != "" {
				if _, err := f.memoryAgent(ref); err != nil {
					return nil, api.Errorf(api.ErrBadRequest, "line %d: field \"agent\": no agent %q: create it first", line, ref)
				}
			}
		}
		f.mu.Lock()
		f.imported = append(f.imported, req)
		f.mu.Unlock()
		return &api.MemoryImportResult{Imported: len(req.Records)}, nil
	})
	apitest.Handle(fk, api.ExportMemoryRoute, func(_ context.Context, _ string, req api.MemoryExportRequest) (*api.MemoryExportPage, error) {
		if _, err := f.memoryAgent(req.Agent); err != nil {
			return nil, err
		}
		all := []api.MemoryRecord{
			{ID: "m-1", Agent: "researcher", Kind: "note", Text: cannedMemories()[0].Text, Time: "2026-11-21T09:30:00Z", Source: "memory_add", Tags: []string{"papers"}},
			{ID: "m-2", Kind: "feedback", Text: "Cite papers with their arXiv id.", Time: "2026-11-21T09:30:00Z", Source: "ann"},
			{ID: "m-3", Agent: "researcher", Kind: "chat", Text: "Ann: the deadline moved to Friday.", Time: "2026-11-20T17:00:00Z", Speaker: "Ann"},
		}
		page := &api.MemoryExportPage{Records: []api.MemoryRecord{}}
		for _, r := range all { // pages of two, as the daemon's of Limit
			if r.ID > req.After && (req.Agent == "" || r.Agent == req.Agent) && len(page.Records) < 2 {
				page.Records = append(page.Records, r)
			}
		}
		if len(page.Records) == 2 {
			page.Next = page.Records[1].ID
		}
		return page, nil
	})
}
