package bots

import (
	"context"
	"sync"
	"time"

	"github.com/agentd/agentd/api"
)

// proposalBoard is what the relay keeps of the proposals (and questions) waiting for a
// person in chat, beyond what the store records: the order they were posted in (a reply
// goes to the one at the bottom of the thread), the message showing each while its post
// is in flight, the proposal as posted (to show its decision or closing), and the expiry
// timers. The daemon is asked for everything else.
//
// Locking rule: mu guards every field declared after it; each method takes it itself and
// calls nothing under it. qgate guards no field: it orders a question's stored message
// against an early answer (questionPosted, answerEarly), whose store calls it covers; it
// is taken before mu, never under it.
type proposalBoard struct {
	qgate sync.Mutex

	mu       sync.Mutex
	props    map[string]*api.Proposal            // proposals posted and not yet decided
	posted   map[string]int64                    // proposal → order of its post (or its question's), while it waits
	postSeq  int64                               // the last order handed out in posted
	timers   map[string]*time.Timer              // expiry timers by proposal
	propMsgs map[string]ChatMessage              // open proposals' messages by proposal and platform
	early    map[string]User                     // answers that came while their question's post was in flight, by proposal|platform
	shown    map[string]map[string]*shownMessage // waiting proposal (or question) → platform → the message showing it
}

func newProposalBoard() *proposalBoard {
	return &proposalBoard{
		props: map[string]*api.Proposal{}, posted: map[string]int64{}, timers: map[string]*time.Timer{},
		propMsgs: map[string]ChatMessage{}, early: map[string]User{}, shown: map[string]map[string]*shownMessage{},
	}
}

// markPosted notes that the proposal (or its question) id was posted now: a reply in
// the thread goes to the one posted last among those waiting.
func (s *proposalBoard) markPosted(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.posted[id]; !ok {
		s.postSeq++
		s.posted[id] = s.postSeq
	}
}

// unmarkPosted notes that proposal id waits no more.
func (s *proposalBoard) unmarkPosted(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.posted, id)
	delete(s.shown, id)
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
// wakes the replies waiting for it (whenShown).
func (s *proposalBoard) messageShown(id, platform, message string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sl := s.shownSlot(id, platform); sl.id == "" {
		sl.id = message
		close(sl.done)
	}
}

// whenShown returns the message showing proposal id on platform ("" when not posted
// yet), and a channel closed once it is, and read, which returns it then.
func (s *proposalBoard) whenShown(id, platform string) (message string, done <-chan struct{}, read func() string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sl := s.shownSlot(id, platform)
	read = func() string {
		s.mu.Lock()
		defer s.mu.Unlock()
		return sl.id
	}
	return sl.id, sl.done, read
}

// awaitShown returns the message showing proposal id on platform, waiting up to wait
// for a post in flight; ok is false when none came in time (or ctx ended).
func (s *proposalBoard) awaitShown(ctx context.Context, id, platform string, wait time.Duration) (message string, ok bool) {
	msg, done, read := s.whenShown(id, platform)
	if msg != "" {
		return msg, true
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-done:
		return read(), true
	case <-t.C:
	case <-ctx.Done():
	}
	return "", false
}

// postOrder is the order in which proposal id was posted; 0 when not seen.
func (s *proposalBoard) postOrder(id string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.posted[id]
}

// bottomWaiting is the one of agents, among those shown (nil: all), whose proposal or
// question waiting was posted last: the one at the bottom of the thread. One never seen
// posted (the relay restarted) counts as older than any seen; of two alike the first
// wins. nil when none waits.
func (s *proposalBoard) bottomWaiting(agents []*api.Agent, shown func(*api.Agent) bool) *api.Agent {
	var bottom *api.Agent
	var best int64 = -1
	for _, a := range agents {
		if id := waitingID(a); id != "" && (shown == nil || shown(a)) {
			if n := s.postOrder(id); n > best {
				bottom, best = a, n
			}
		}
	}
	return bottom
}

// openProposal remembers p as posted and open to a decision.
func (s *proposalBoard) openProposal(p *api.Proposal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.props[p.ID] = p
}

// shownRef is what a typed reply names of p (api.Proposal.Ref): p as the relay last
// posted it, else as the daemon has it now (the relay restarted since).
func (s *proposalBoard) shownRef(p *api.Proposal) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if posted := s.props[p.ID]; posted != nil {
		return posted.Ref()
	}
	return p.Ref()
}

// decided forgets an open proposal and stops its expiry; it returns the proposal as
// posted (nil when the relay did not post it).
func (s *proposalBoard) decided(id string) *api.Proposal {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.props[id]
	delete(s.props, id)
	delete(s.posted, id)
	delete(s.shown, id)
	if t := s.timers[id]; t != nil {
		t.Stop()
		delete(s.timers, id)
	}
	return p
}

// closeOpen forgets an agent's open proposals and returns them.
func (s *proposalBoard) closeOpen(agentID string) []*api.Proposal {
	s.mu.Lock()
	defer s.mu.Unlock()
	var open []*api.Proposal
	for id, p := range s.props {
		if p.AgentID == agentID {
			open = append(open, p)
			delete(s.props, id)
			delete(s.posted, id)
			delete(s.shown, id)
		}
	}
	return open
}

// keepMessage remembers an open proposal's message until takeMessage hands it out for
// the proposal's decision or closing: the store drops it with its agent, and a team run
// removes its role agents right after stopping them, before the relay closes their
// proposals.
func (s *proposalBoard) keepMessage(m ChatMessage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.propMsgs[m.ProposalID+"\x00"+m.Platform] = m
}

// takeMessage returns and forgets the message kept for a proposal on platform.
func (s *proposalBoard) takeMessage(proposalID, platform string) (ChatMessage, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.propMsgs[proposalID+"\x00"+platform]
	delete(s.propMsgs, proposalID+"\x00"+platform)
	return m, ok
}

// armTimer runs fire after d unless proposal id has a timer already.
func (s *proposalBoard) armTimer(id string, d time.Duration, fire func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.timers[id]; ok {
		return
	}
	s.timers[id] = time.AfterFunc(d, fire)
}

// timerFired forgets proposal id's timer and reports whether the proposal is still open.
func (s *proposalBoard) timerFired(id string) (open bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, open = s.props[id]
	delete(s.timers, id)
	return open
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
