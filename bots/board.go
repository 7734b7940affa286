package bots

import (
	"context"
	"sync"
	"time"
)

// proposalBoard is what the relay keeps of the proposals (and questions, and run ends)
// waiting for a person in chat that the store cannot hold: the message showing each
// while its post is in flight (a reply can arrive before the post returns), answers that
// came meanwhile, and the expiry timers. The store has the rest: each message, the Ref
// it shows, whether it is closed (Bindings), and the proposals themselves (Service).
//
// Locking rule: mu guards every field declared after it; each method takes it itself and
// calls nothing under it. qgate guards no field: it orders a question's stored message
// against an early answer (questionPosted, answerEarly), whose store calls it covers; it
// is taken before mu, never under it.
type proposalBoard struct {
	qgate sync.Mutex

	mu     sync.Mutex
	shown  map[string]map[string]*shownMessage // posted or being posted, while it waits → platform → its message
	timers map[string]*time.Timer              // expiry timers by proposal
	early  map[string]User                     // answers that came while their question's post was in flight, by proposal|platform
}

func newProposalBoard() *proposalBoard {
	return &proposalBoard{shown: map[string]map[string]*shownMessage{}, timers: map[string]*time.Timer{}, early: map[string]User{}}
}

// markPosted notes that the proposal (or its question, or a run's end) id is being
// posted: a reply meanwhile waits for its message (awaitShown).
func (s *proposalBoard) markPosted(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.shown[id] == nil {
		s.shown[id] = map[string]*shownMessage{}
	}
}

// posting reports whether id was posted, or is being posted, and waits.
func (s *proposalBoard) posting(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.shown[id] != nil
}

// forget notes that id waits no more, and stops its expiry.
func (s *proposalBoard) forget(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.shown, id)
	if t := s.timers[id]; t != nil {
		t.Stop()
		delete(s.timers, id)
	}
}

// shownMessage is the message showing a waiting proposal on one platform: done is
// closed once id is known.
type shownMessage struct {
	done chan struct{}
	id   string
}

// shownSlot returns proposal id's slot on platform, made when missing. Caller holds mu.
func (s *proposalBoard) shownSlot(id, platform string) *shownMessage {
	m := s.shown[id]
	if m == nil {
		m = map[string]*shownMessage{}
		s.shown[id] = m
	}
	sl := m[platform]
	if sl == nil {
		sl = &shownMessage{done: make(chan struct{})}
		m[platform] = sl
	}
	return sl
}

// messageShown notes that message shows proposal (or question) id on platform, and
// wakes the replies waiting for it (awaitShown).
func (s *proposalBoard) messageShown(id, platform, message string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sl := s.shownSlot(id, platform); sl.id == "" {
		sl.id = message
		close(sl.done)
	}
}

// shownNow is the message showing id on platform as far as the relay posted it; "" when
// it has not (the store may know it: a post before a restart).
func (s *proposalBoard) shownNow(id, platform string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sl := s.shown[id][platform]; sl != nil {
		return sl.id
	}
	return ""
}

// awaitShown returns the message showing proposal id on platform, waiting up to wait
// for a post in flight; ok is false when none came in time (or ctx ended).
func (s *proposalBoard) awaitShown(ctx context.Context, id, platform string, wait time.Duration) (message string, ok bool) {
	s.mu.Lock()
	sl := s.shownSlot(id, platform)
	s.mu.Unlock()
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-sl.done:
		s.mu.Lock()
		defer s.mu.Unlock()
		return sl.id, true
	case <-t.C:
	case <-ctx.Done():
	}
	return "", false
}

// armTimer runs fire after d unless proposal id has a timer already.
func (s *proposalBoard) armTimer(id string, d time.Duration, fire func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.timers[id]; !ok {
		s.timers[id] = time.AfterFunc(d, fire)
	}
}

// timerFired forgets proposal id's timer, which fired: a proposal asked again arms anew.
func (s *proposalBoard) timerFired(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.timers, id)
}

// stopTimers stops every expiry timer (the relay stops).
func (s *proposalBoard) stopTimers() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range s.timers {
		t.Stop()
	}
}

// questionPosted runs stored (which records a question's message in the store) and then
// returns, and forgets, the answer that came for it while its post was in flight. qgate
// makes stored and answerEarly's lookup one or the other first, never interleaved.
func (s *proposalBoard) questionPosted(key string, stored func()) (User, bool) {
	s.qgate.Lock()
	defer s.qgate.Unlock()
	stored()
	s.mu.Lock()
	defer s.mu.Unlock()
	u, answered := s.early[key]
	delete(s.early, key)
	return u, answered
}

// answerEarly looks the question's message up; when it is not stored yet (its post is in
// flight), it leaves u's answer for questionPosted to show.
func (s *proposalBoard) answerEarly(key string, u User, lookup func() (*ChatMessage, error)) (*ChatMessage, error) {
	s.qgate.Lock()
	defer s.qgate.Unlock()
	m, err := lookup()
	if err == nil && m == nil {
		s.mu.Lock()
		s.early[key] = u
		s.mu.Unlock()
	}
	return m, err
}
