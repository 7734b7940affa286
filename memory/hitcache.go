package memory

import "sync"

// hitCache keeps the stored fields of the memories searches returned lately, by id, so a
// search loads from the index only those it has not seen: an agent's prompt
// finds mostly the same memories step after step, and loading a memory's stored fields
// was a fifth of a prompt's search and most of its garbage. Each generation has its own.
//
// It never serves an old text: the writer drops a memory's entry once a batch that adds or
// deletes it is in the index (invalidate, which also moves the version on), and a search
// caches what it loaded only when no batch came in since it began (put with the version
// it read first), so what it read from an older snapshot is never kept.
type hitCache struct {
	mu      sync.Mutex // guards m, bytes and version
	m       map[string]Hit
	bytes   int // what m holds, about (hitBytes)
	version uint64
}

// The cache's bounds: about the hot memories of a hundred agents (a prompt chooses among
// 30), and the bytes they hold with their analyses for Fit.
const (
	hitCacheSize  = 4096
	hitCacheBytes = 16 << 20
)

// hitBytes is about what a memory costs the cache: its fields, and once Fit has read it
// its folded text, terms and token offsets (fitText), each about as long as its text.
func hitBytes(h Hit) int { return 4*len(h.Text) + len(h.Source) + len(h.Speaker) + 256 }

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
// since. When full it drops about half.
func (c *hitCache) put(hits map[string]Hit, version uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.version != version {
		return
	}
	add := 0
	for _, h := range hits {
		add += hitBytes(h)
	}
	if c.m == nil {
		c.m = make(map[string]Hit, len(hits))
	}
	if len(c.m)+len(hits) > hitCacheSize || c.bytes+add > hitCacheBytes {
		// Full: keep about half, any half (map order), so what is hot mostly stays.
		for id, h := range c.m {
			if len(c.m)+len(hits) <= hitCacheSize/2 && c.bytes+add <= hitCacheBytes/2 {
				break
			}
			c.bytes -= hitBytes(h)
			delete(c.m, id)
		}
	}
	for id, h := range hits {
		h.BM25, h.Score, h.Similarity = 0, 0, 0
		if h.an == nil {
			h.an = &fitText{} // made by the first Fit that shows it, then shared
		}
		if old, ok := c.m[id]; ok {
			c.bytes -= hitBytes(old)
		}
		c.m[id] = h
		c.bytes += hitBytes(h)
	}
}

// invalidate drops the memories a batch now in the index added or deleted.
func (c *hitCache) invalidate(ids []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.version++
	for _, id := range ids {
		if old, ok := c.m[id]; ok {
			c.bytes -= hitBytes(old)
			delete(c.m, id)
		}
	}
}
