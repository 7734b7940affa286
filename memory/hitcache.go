package memory

import "sync"

// hitCache keeps the stored fields of the memories searches returned lately, by id, so a
// search loads from the index only those it has not seen (issue 21): an agent's prompt
// finds mostly the same memories step after step, and loading a memory's stored fields
// was a fifth of a prompt's search and most of its garbage. Each generation has its own.
//
// It never serves an old text: the writer drops a memory's entry once a batch that adds or
// deletes it is in the index (invalidate, which also moves the version on), and a search
// caches what it loaded only when no batch came in since it began (put with the version
// it read first), so what it read from an older snapshot is never kept.
type hitCache struct {
	mu      sync.Mutex // guards m and version
	m       map[string]Hit
	version uint64
}

// hitCacheSize bounds the memories kept: about the hot memories of a hundred agents (a
// prompt chooses among 30), with their analyses for Fit (a few KB each at most).
const hitCacheSize = 4096

// begin returns the version a search starts at.
func (c *hitCache) begin() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.version
}

// get returns the memory's stored fields, without a score.
func (c *hitCache) get(id string) (Hit, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	h, ok := c.m[id]
	return h, ok
}

// put keeps hits that a search which began at version loaded, unless a batch came in
// since. When full it starts over: what is hot comes back at once.
func (c *hitCache) put(hits map[string]Hit, version uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.version != version {
		return
	}
	if c.m == nil || len(c.m)+len(hits) > hitCacheSize {
		c.m = make(map[string]Hit, len(hits))
	}
	for id, h := range hits {
		h.BM25, h.Score, h.Similarity = 0, 0, 0
		h.an = &fitText{} // made by the first Fit that shows it, then shared
		c.m[id] = h
	}
}

// invalidate drops the memories a batch now in the index added or deleted.
func (c *hitCache) invalidate(ids []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.version++
	for _, id := range ids {
		delete(c.m, id)
	}
}
