package bots

import "sync"

// adapters are the relay's platforms, each with the rules it serves under; Add fills it
// before Run.
type adapters struct {
	mu         sync.Mutex
	byPlatform map[string]*endpoint // platform → adapter and its rules
}

type endpoint struct {
	a     Adapter
	rules Rules
}

// add attaches ep under its platform; false when the platform has one already.
func (s *adapters) add(ep *endpoint) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, dup := s.byPlatform[ep.a.Platform()]; dup {
		return false
	}
	if s.byPlatform == nil {
		s.byPlatform = map[string]*endpoint{}
	}
	s.byPlatform[ep.a.Platform()] = ep
	return true
}

// get is platform's adapter; nil when none serves it.
func (s *adapters) get(platform string) *endpoint {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.byPlatform[platform]
}

// all lists the adapters by platform (a copy: the caller may read it under its own lock).
func (s *adapters) all() map[string]*endpoint {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]*endpoint, len(s.byPlatform))
	for k, ep := range s.byPlatform {
		out[k] = ep
	}
	return out
}
