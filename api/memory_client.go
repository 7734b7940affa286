package api

import (
	"context"
)

// Memories lists memories, newest first: an agent's own and the shared ones, or every one
// when req.Agent is empty.
func (c *Client) Memories(ctx context.Context, req MemoryListRequest) ([]Memory, error) {
	return call(ctx, c, MemoriesRoute, "", req)
}

// AddMemory saves a memory for an agent, or a shared one when req.Agent is empty.
func (c *Client) AddMemory(ctx context.Context, req MemoryAddRequest) (*Memory, error) {
	return call(ctx, c, AddMemoryRoute, "", req)
}

// SearchMemory returns the memories most relevant to req.Query, best first, with scores.
func (c *Client) SearchMemory(ctx context.Context, req MemorySearchRequest) ([]Memory, error) {
	return call(ctx, c, SearchMemoryRoute, "", req)
}

// DeleteMemory removes one memory by id.
func (c *Client) DeleteMemory(ctx context.Context, id string) error {
	_, err := call(ctx, c, DeleteMemoryRoute, id, None{})
	return err
}

// ReindexMemory rebuilds the memory index from the store and returns its stats once the
// new index is live. It can take a while with many memories.
func (c *Client) ReindexMemory(ctx context.Context) (*MemoryStats, error) {
	return call(ctx, c, ReindexMemoryRoute, "", None{})
}

// MemoryStats describes the memory index.
func (c *Client) MemoryStats(ctx context.Context) (*MemoryStats, error) {
	return call(ctx, c, MemoryStatsRoute, "", None{})
}
