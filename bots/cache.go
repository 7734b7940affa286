package bots

import (
	"sync"
	"time"
)

// Cache keeps what a bot learned from its platform (a group's members, a member's roles,
// a display name) for a while, by key; safe for concurrent use, ready as its zero value.
type Cache[V any] struct {
	mu sync.Mutex
	m  map[string]cached[V]
}

type cached[V any] struct {
	v  V
	at time.Time
}

// Get returns key's value when it was put less than ttl(value) ago.
func (c *Cache[V]) Get(key string, ttl func(V) time.Duration) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[key]
	if !ok || time.Since(e.at) >= ttl(e.v) {
		var zero V
		return zero, false
	}
	return e.v, true
}

// Put keeps v for key from now.
func (c *Cache[V]) Put(key string, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]cached[V]{}
	}
	c.m[key] = cached[V]{v, time.Now()}
}

// For is a ttl of d whatever the value.
func For[V any](d time.Duration) func(V) time.Duration {
	return func(V) time.Duration { return d }
}
