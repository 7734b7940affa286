package bots

import (
	"testing"
	"time"
)

// TestCacheKeepsValuesForTheirTTL: a value is returned while younger than its ttl, which
// may depend on the value (a miss kept shorter than a hit), and not once older.
func TestCacheKeepsValuesForTheirTTL(t *testing.T) {
	var c Cache[string]
	ttl := func(v string) time.Duration {
		if v == "" {
			return 0 // a miss: ask again at once
		}
		return time.Hour
	}
	if _, ok := c.Get("U1", ttl); ok {
		t.Fatal("an empty cache had U1")
	}
	c.Put("U1", "Ana")
	c.Put("U2", "")
	if v, ok := c.Get("U1", ttl); !ok || v != "Ana" {
		t.Errorf("U1 = %q, %v; want Ana, kept", v, ok)
	}
	if _, ok := c.Get("U2", ttl); ok {
		t.Error("a miss with no ttl was kept")
	}
	if _, ok := c.Get("U1", For[string](0)); ok {
		t.Error("a value was kept past its ttl")
	}
}
