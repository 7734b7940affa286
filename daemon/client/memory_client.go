package client

import (
	"context"
	"net/url"
	"strconv"
)

// Memories lists memories, newest first: an agent's own and the shared ones, or every one
// when req.Agent is empty.
func (c *Client) Memories(ctx context.Context, req MemoryListRequest) ([]Memory, error) {
	q := url.Values{}
	if req.Agent != "" {
		q.Set("agent", req.Agent)
	}
	if req.Kind != "" {
		q.Set("kind", req.Kind)
	}
	if req.Limit != 0 {
		q.Set("limit", strconv.Itoa(req.Limit))
	}
	path := "/v0/memories"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var out []Memory
	err := c.do(ctx, "GET", path, nil, &out)
	return out, err
}

// AddMemory saves a memory for an agent, or a shared one when req.Agent is empty.
func (c *Client) AddMemory(ctx context.Context, req MemoryAddRequest) (*Memory, error) {
	var m Memory
	return &m, c.do(ctx, "POST", "/v0/memories", req, &m)
}

// SearchMemory returns the memories most relevant to req.Query, best first, with scores.
func (c *Client) SearchMemory(ctx context.Context, req MemorySearchRequest) ([]Memory, error) {
	var out []Memory
	err := c.do(ctx, "POST", "/v0/memory/search", req, &out)
	return out, err
}

// DeleteMemory removes one memory by id.
func (c *Client) DeleteMemory(ctx context.Context, id string) error {
	return c.do(ctx, "DELETE", "/v0/memories/"+url.PathEscape(id), nil, nil)
}

// ReindexMemory rebuilds the memory index from the store and returns its stats once the
// new index is live. It can take a while with many memories.
func (c *Client) ReindexMemory(ctx context.Context) (*MemoryStats, error) {
	var st MemoryStats
	return &st, c.do(ctx, "POST", "/v0/memory/reindex", nil, &st)
}

// MemoryStats describes the memory index.
func (c *Client) MemoryStats(ctx context.Context) (*MemoryStats, error) {
	var st MemoryStats
	return &st, c.do(ctx, "GET", "/v0/memory/stats", nil, &st)
}
