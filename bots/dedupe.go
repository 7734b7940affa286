package bots

import "sync"

// Platforms deliver some events more than once: Slack retries an event it thinks was not
// acknowledged (racing the first delivery), Discord replays events after a resume. A
// message or click is acted on once; the relay remembers the last ones it handled.

// seenPerPlatform is how many handled messages and clicks are remembered per platform,
// and again for those refused (Relay.seenRing): enough for the minutes a platform keeps
// retrying, small enough to stay in memory.
const seenPerPlatform = 4096

// seenIDs remembers the last seenPerPlatform keys handled per platform. Locking rule: mu
// guards every field and is held only around map and ring updates.
type seenIDs struct {
	mu    sync.Mutex
	rings map[string]*seenRing // platform → its remembered keys
}

type seenRing struct {
	set  map[string]struct{}
	keys []string // in the order seen; the oldest is overwritten at next
	next int
}

// first reports whether key is new on platform, and remembers it; a second call with
// the same key, even concurrent with the first, reports false. An empty key (an event
// the platform gave no id) is always new: nothing can tell its copies apart.
func (s *seenIDs) first(platform, key string) bool {
	if key == "" {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rings == nil {
		s.rings = map[string]*seenRing{}
	}
	r := s.rings[platform]
	if r == nil {
		r = &seenRing{set: map[string]struct{}{}}
		s.rings[platform] = r
	}
	if _, dup := r.set[key]; dup {
		return false
	}
	if len(r.keys) < seenPerPlatform {
		r.keys = append(r.keys, key)
	} else {
		delete(r.set, r.keys[r.next])
		r.keys[r.next] = key
		r.next = (r.next + 1) % seenPerPlatform
	}
	r.set[key] = struct{}{}
	return true
}
