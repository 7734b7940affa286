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

// threadBook is what the relay keeps of where agents' events go: the bindings of the
// agents that have a thread (a cache of the store's, read at Run), the names and parents
// of those that have none (helpers post in their nearest bound parent's thread), and the
// state each thread was last told of (so a repeated state event is not posted twice).
//
// Locking rule: mu guards every field declared after it; each method takes it itself and
// calls nothing under it.
type threadBook struct {
	mu     sync.Mutex
	bound  map[string]map[string]*Binding // agent → platform → binding
	agents map[string]agentInfo           // unbound agents' names and parents (helpers)
	states map[string]string              // agent → last state shown
}

func newThreadBook() *threadBook {
	return &threadBook{bound: map[string]map[string]*Binding{}, agents: map[string]agentInfo{}, states: map[string]string{}}
}

// agentInfo is what the relay knows of an agent that has no binding.
type agentInfo struct {
	name, parent string
}

// bind caches each b as its agent's binding on its platform.
func (s *threadBook) bind(bs ...*Binding) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, b := range bs {
		putIn(s.bound, b.AgentID, b.Platform, b)
	}
}

// putIn sets m[k][k2] to v, making the inner map on first use.
func putIn[K, K2 comparable, V any](m map[K]map[K2]V, k K, k2 K2, v V) {
	if m[k] == nil {
		m[k] = map[K2]V{}
	}
	m[k][k2] = v
}

// boundAgents lists the agents that have a thread.
func (s *threadBook) boundAgents() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]string, 0, len(s.bound))
	for id := range s.bound {
		ids = append(ids, id)
	}
	return ids
}

// runThread returns the channel and thread runID is bound to on platform.
func (s *threadBook) runThread(platform, runID string) (channel, thread string, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range s.bound {
		if b := m[platform]; b != nil && b.RunID == runID {
			return b.Channel, b.Thread, true
		}
	}
	return "", "", false
}

// targets returns the threads, on the platforms of eps, an agent's events go to: its
// own, or for a helper its nearest bound parent's, labelled with the helper's name; none
// when neither is bound.
func (s *threadBook) targets(agentID string, eps map[string]*endpoint) []target {
	s.mu.Lock()
	defer s.mu.Unlock()
	id, label := s.boundAncestor(agentID)
	var out []target
	for platform, b := range s.bound[id] {
		if ep, ok := eps[platform]; ok {
			out = append(out, target{ep: ep, b: b, label: label})
		}
	}
	return out
}

// boundAncestor returns the nearest agent, agentID itself or a parent, that has a
// binding, and the label its events carry there ("" for agentID's own). Caller holds mu.
func (s *threadBook) boundAncestor(agentID string) (string, string) {
	id := agentID
	for range maxHelperHops {
		if _, ok := s.bound[id]; ok {
			if id == agentID {
				return id, ""
			}
			return id, s.agents[agentID].name
		}
		info, ok := s.agents[id]
		if !ok || info.parent == "" {
			return agentID, ""
		}
		id = info.parent
	}
	return agentID, ""
}

// knows reports whether the relay has seen agentID, bound or not.
func (s *threadBook) knows(agentID string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, known := s.agents[agentID]
	_, bound := s.bound[agentID]
	return known || bound
}

// learnAgent notes an unbound agent's name and parent.
func (s *threadBook) learnAgent(id string, info agentInfo) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.agents[id] = info
}

// remove forgets a removed agent.
func (s *threadBook) remove(agentID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.bound, agentID)
	delete(s.states, agentID)
	delete(s.agents, agentID)
}

// showState records key as the agent's state shown and returns the one shown before.
func (s *threadBook) showState(agentID, key string) (prev string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	prev = s.states[agentID]
	s.states[agentID] = key
	return prev
}
