package api

import "context"

// MemoryClient reaches the daemon's long-term memory: c.Memory().Search(ctx, req).
type MemoryClient struct{ c *Client }

// Memory returns the client for memories, over c's transport.
func (c *Client) Memory() MemoryClient { return MemoryClient{c} }

// List lists memories, newest first: an agent's own and the shared ones, or every one
// when req.Agent is empty.
func (m MemoryClient) List(ctx context.Context, req MemoryListRequest) ([]Memory, error) {
	return MemoriesRoute.Do(ctx, m.c, "", req)
}

// Add saves a memory for an agent, or a shared one when req.Agent is empty.
func (m MemoryClient) Add(ctx context.Context, req MemoryAddRequest) (*Memory, error) {
	return AddMemoryRoute.Do(ctx, m.c, "", req)
}

// Search returns the memories most relevant to req.Query, best first, with scores.
func (m MemoryClient) Search(ctx context.Context, req MemorySearchRequest) ([]Memory, error) {
	return SearchMemoryRoute.Do(ctx, m.c, "", req)
}

// Delete removes one memory by id.
func (m MemoryClient) Delete(ctx context.Context, id string) error {
	_, err := DeleteMemoryRoute.Do(ctx, m.c, id, None{})
	return err
}

// Reindex rebuilds the memory index from the store and returns its stats once the new
// index is live. It can take a while with many memories.
func (m MemoryClient) Reindex(ctx context.Context) (*MemoryStats, error) {
	return ReindexMemoryRoute.Do(ctx, m.c, "", None{})
}

// Stats describes the memory index.
func (m MemoryClient) Stats(ctx context.Context) (*MemoryStats, error) {
	return MemoryStatsRoute.Do(ctx, m.c, "", None{})
}

// Import stores a batch of memory records, all or none.
func (m MemoryClient) Import(ctx context.Context, req MemoryImportRequest) (*MemoryImportResult, error) {
	return ImportMemoryRoute.Do(ctx, m.c, "", req)
}

// Export returns one page of memory records; follow Next until it is empty.
func (m MemoryClient) Export(ctx context.Context, req MemoryExportRequest) (*MemoryExportPage, error) {
	return ExportMemoryRoute.Do(ctx, m.c, "", req)
}
