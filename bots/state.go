package bots

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/agentd/agentd/api"
)

// relayState is everything the relay remembers between events, and its methods are the
// only way in (TestOnlyRelayStateTouchesItsFields holds every other file to that).
//
// Locking rule: mu guards every field declared after it. Each method takes mu itself, and
// nothing is called while it is held — no store, daemon or chat call, no callback — so no
// other lock is ever taken under mu and its holders never wait on I/O. qgate guards no
// field: it orders a question's stored message against an early answer (questionPosted,
// answerEarly), whose store calls it covers; it is taken before mu, never under it.
type relayState struct {
	qgate sync.Mutex

	mu        sync.Mutex
	adapters  map[string]*endpoint                // platform → adapter and its rules
	bound     map[string]map[string]*Binding      // agent → platform → binding
	props     map[string]*api.Proposal            // proposals posted and not yet decided
	states    map[string]string                   // agent → last state shown
	agents    map[string]agentInfo                // unbound agents' names and parents (helpers)
	posted    map[string]int64                    // proposal → order of its post (or its question's), while it waits
	postSeq   int64                               // the last order handed out in posted
	timers    map[string]*time.Timer              // expiry timers by proposal
	teamBound map[string]map[string]*TeamBinding  // team run → platform → binding
	roles     map[string]teamRole                 // role agent → its team run and role
	following map[string]bool                     // team runs whose events are followed
	teamEnded map[string]bool                     // ended team runs kept for their role agents' last events
	propMsgs  map[string]ChatMessage              // open proposals' messages by proposal and platform
	early     map[string]User                     // answers that came while their question's post was in flight, by proposal|platform
	shown     map[string]map[string]*shownMessage // waiting proposal (or question) → platform → the message showing it
	schedules Schedules                           // for /agent schedule; nil without
	teams     Teams                               // for /agent team; nil without
	runCtx    context.Context                     // Run's, for the team followers
	followWG  sync.WaitGroup                      // the team followers; Add under mu, with runCtx checked
}

func newRelayState() *relayState {
	return &relayState{
		adapters: map[string]*endpoint{}, bound: map[string]map[string]*Binding{}, props: map[string]*api.Proposal{},
		states: map[string]string{}, agents: map[string]agentInfo{}, posted: map[string]int64{}, timers: map[string]*time.Timer{},
		teamBound: map[string]map[string]*TeamBinding{}, roles: map[string]teamRole{}, following: map[string]bool{},
		teamEnded: map[string]bool{}, propMsgs: map[string]ChatMessage{}, early: map[string]User{},
		shown: map[string]map[string]*shownMessage{},
	}
}

// addAdapter attaches ep under its platform; false when the platform has one already.
func (s *relayState) addAdapter(ep *endpoint) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, dup := s.adapters[ep.a.Platform()]; dup {
		return false
	}
	s.adapters[ep.a.Platform()] = ep
	return true
}

func (s *relayState) endpoint(platform string) *endpoint {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.adapters[platform]
}

func (s *relayState) endpoints() []*endpoint {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*endpoint, 0, len(s.adapters))
	for _, ep := range s.adapters {
		out = append(out, ep)
	}
	return out
}

func (s *relayState) setSchedules(sc Schedules) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.schedules = sc
}

func (s *relayState) scheduleService() Schedules {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.schedules
}

func (s *relayState) setTeams(t Teams) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.teams = t
}

func (s *relayState) teamService() Teams {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.teams
}

func (s *relayState) setRunCtx(ctx context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.runCtx = ctx
}

// bind caches each b as its agent's binding on its platform.
func (s *relayState) bind(bs ...*Binding) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, b := range bs {
		m := s.bound[b.AgentID]
		if m == nil {
			m = map[string]*Binding{}
			s.bound[b.AgentID] = m
		}
		m[b.Platform] = b
	}
}

// boundAgents lists the agents that have a thread.
func (s *relayState) boundAgents() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]string, 0, len(s.bound))
	for id := range s.bound {
		ids = append(ids, id)
	}
	return ids
}

// runThread returns the channel and thread runID is bound to on platform.
func (s *relayState) runThread(platform, runID string) (channel, thread string, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range s.bound {
		if b := m[platform]; b != nil && b.RunID == runID {
			return b.Channel, b.Thread, true
		}
	}
	return "", "", false
}

// targets returns the adapters and threads an agent's events go to: its own, or for a
// helper its nearest bound parent's, labelled with the helper's name, or for a team's
// role agent its team's, labelled with the role.
func (s *relayState) targets(agentID string) []target {
	s.mu.Lock()
	defer s.mu.Unlock()
	id, label := s.boundAncestor(agentID)
	if _, ok := s.bound[id]; !ok {
		return s.teamTargets(agentID)
	}
	var out []target
	for platform, b := range s.bound[id] {
		if ep, ok := s.adapters[platform]; ok {
			out = append(out, target{ep: ep, b: b, label: label})
		}
	}
	return out
}

// boundAncestor returns the nearest agent, agentID itself or a parent, that has a
// binding, and the label its events carry there ("" for agentID's own). Caller holds mu.
func (s *relayState) boundAncestor(agentID string) (string, string) {
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

// teamTargets are the threads of a role agent's team, labelled with its role. Caller
// holds mu.
func (s *relayState) teamTargets(agentID string) []target {
	tr, ok := s.roles[agentID]
	if !ok {
		return nil
	}
	var out []target
	for platform, b := range s.teamBound[tr.team] {
		if ep, ok := s.adapters[platform]; ok {
			out = append(out, target{ep: ep, b: &Binding{Platform: platform, Team: b.Team, Channel: b.Channel, Thread: b.Thread, AgentID: agentID}, label: tr.role})
		}
	}
	return out
}

// knows reports whether the relay has seen agentID, bound or not.
func (s *relayState) knows(agentID string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, known := s.agents[agentID]
	_, bound := s.bound[agentID]
	return known || bound
}

// learnAgent notes an unbound agent's name and parent.
func (s *relayState) learnAgent(id string, info agentInfo) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.agents[id] = info
}

// knowsHelpersOf reports whether the relay has seen a helper of agentID (at any depth).
func (s *relayState) knowsHelpersOf(agentID string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id := range s.agents {
		cur := id
		for range maxHelperHops {
			info, ok := s.agents[cur]
			if !ok || info.parent == "" {
				break
			}
			if info.parent == agentID {
				return true
			}
			cur = info.parent
		}
	}
	return false
}

// removeAgent forgets a removed agent, and its ended team run's threads when it was the
// run's last role agent.
func (s *relayState) removeAgent(agentID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	tr, isRole := s.roles[agentID]
	delete(s.roles, agentID)
	if isRole && s.teamEnded[tr.team] {
		s.forgetTeam(tr.team) // its last role agent gone
	}
	delete(s.bound, agentID)
	delete(s.states, agentID)
	delete(s.agents, agentID)
}

// showState records key as the agent's state shown and returns the one shown before.
func (s *relayState) showState(agentID, key string) (prev string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	prev = s.states[agentID]
	s.states[agentID] = key
	return prev
}

// markPosted notes that the proposal (or its question) id was posted now: a reply in
// the thread goes to the one posted last among those waiting.
func (s *relayState) markPosted(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.posted[id]; !ok {
		s.postSeq++
		s.posted[id] = s.postSeq
	}
}

// unmarkPosted notes that proposal id waits no more.
func (s *relayState) unmarkPosted(id string) {
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
func (s *relayState) shownSlot(id, platform string) *shownMessage {
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
func (s *relayState) messageShown(id, platform, message string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sl := s.shownSlot(id, platform); sl.id == "" {
		sl.id = message
		close(sl.done)
	}
}

// whenShown returns the message showing proposal id on platform ("" when not posted
// yet), and a channel closed once it is, and read, which returns it then.
func (s *relayState) whenShown(id, platform string) (message string, done <-chan struct{}, read func() string) {
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

// postOrder is the order in which proposal id was posted; 0 when not seen.
func (s *relayState) postOrder(id string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.posted[id]
}

// openProposal remembers p as posted and open to a decision.
func (s *relayState) openProposal(p *api.Proposal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.props[p.ID] = p
}

// decided forgets an open proposal and stops its expiry; it returns the proposal as
// posted (nil when the relay did not post it).
func (s *relayState) decided(id string) *api.Proposal {
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
func (s *relayState) closeOpen(agentID string) []*api.Proposal {
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

// keepMessage remembers an open proposal's message (see Relay.keepMessage).
func (s *relayState) keepMessage(m ChatMessage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.propMsgs[m.ProposalID+"\x00"+m.Platform] = m
}

// takeMessage returns and forgets the message kept for a proposal on platform.
func (s *relayState) takeMessage(proposalID, platform string) (ChatMessage, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.propMsgs[proposalID+"\x00"+platform]
	delete(s.propMsgs, proposalID+"\x00"+platform)
	return m, ok
}

// armTimer runs fire after d unless proposal id has a timer already.
func (s *relayState) armTimer(id string, d time.Duration, fire func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.timers[id]; ok {
		return
	}
	s.timers[id] = time.AfterFunc(d, fire)
}

// timerFired forgets proposal id's timer and reports whether the proposal is still open.
func (s *relayState) timerFired(id string) (open bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, open = s.props[id]
	delete(s.timers, id)
	return open
}

// stopTimers stops every expiry timer (the relay stops).
func (s *relayState) stopTimers() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range s.timers {
		t.Stop()
	}
}

// questionPosted runs stored (which records a question's message in the store) and then
// returns, and forgets, the answer that came for it while its post was in flight. qgate
// makes stored and answerEarly's lookup one or the other first, never interleaved.
func (s *relayState) questionPosted(key string, stored func()) (User, bool) {
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
func (s *relayState) answerEarly(key string, u User, lookup func() (*ChatMessage, error)) (*ChatMessage, error) {
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

// bindTeam caches each b as its team run's thread on its platform.
func (s *relayState) bindTeam(bs ...*TeamBinding) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, b := range bs {
		m := s.teamBound[b.TeamRunID]
		if m == nil {
			m = map[string]*TeamBinding{}
			s.teamBound[b.TeamRunID] = m
		}
		m[b.Platform] = b
	}
}

// teamRunEnded marks a team run ended and forgets its threads unless role agents of it
// remain.
func (s *relayState) teamRunEnded(teamID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.teamEnded[teamID] = true
	s.forgetTeam(teamID)
}

// forgetEndedTeam forgets an ended team run's role agents and threads, however many of
// its role agents the relay still knows.
func (s *relayState) forgetEndedTeam(teamID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.teamEnded[teamID] {
		return
	}
	for id, tr := range s.roles {
		if tr.team == teamID {
			delete(s.roles, id)
		}
	}
	s.forgetTeam(teamID)
}

// forgetTeam drops an ended team run from memory unless role agents of it remain.
// Caller holds mu.
func (s *relayState) forgetTeam(teamID string) {
	for _, tr := range s.roles {
		if tr.team == teamID {
			return
		}
	}
	delete(s.teamBound, teamID)
	delete(s.teamEnded, teamID)
}

// learnTeam notes the role agents of run, the team run teamID as read from the engine,
// and returns their ids; none once the run ended, as its role agents are going.
func (s *relayState) learnTeam(teamID string, run *api.TeamRun) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.teamEnded[teamID] || run.Status != api.TeamRunning {
		return nil // learning them again would keep it in memory
	}
	var ids []string
	for role, id := range run.Agents {
		s.roles[id] = teamRole{team: teamID, role: role}
		ids = append(ids, id)
	}
	return ids
}

// placeRole notes agentID as a role agent of a team run.
func (s *relayState) placeRole(agentID string, tr teamRole) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.roles[agentID] = tr
}

// teamOfName returns the bound team run whose role agents' names name has the prefix of,
// for an agent not placed yet; "" otherwise.
func (s *relayState) teamOfName(agentID, name string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, known := s.roles[agentID]; known {
		return ""
	}
	var team string
	for id := range s.teamBound {
		if p := teamAgentPrefix(id); p != "" && strings.HasPrefix(name, p) {
			team = id
		}
	}
	return team
}

// roleOf returns the team and role of a role agent bound through its team.
func (s *relayState) roleOf(agentID string) (teamRole, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	tr, ok := s.roles[agentID]
	return tr, ok && len(s.teamBound[tr.team]) > 0
}

// startFollowing claims the following of team run teamID and counts its follower in;
// ok is false when it is followed already, or the relay is not running.
func (s *relayState) startFollowing(teamID string) (ctx context.Context, teams Teams, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ctx = s.runCtx
	if ctx == nil || ctx.Err() != nil || s.following[teamID] || s.teams == nil {
		return nil, nil, false
	}
	s.following[teamID] = true
	s.followWG.Add(1)
	return ctx, s.teams, true
}

// followEnded is a follower's last call.
func (s *relayState) followEnded(teamID string) {
	s.mu.Lock()
	delete(s.following, teamID)
	s.mu.Unlock()
	s.followWG.Done()
}

// waitFollowers returns once every team follower has ended.
func (s *relayState) waitFollowers() { s.followWG.Wait() }

// teamTurnTargets returns the threads of team run teamID that have not shown its entry
// seq yet, with their bindings (whose Seq teamSeqPosted advances).
func (s *relayState) teamTurnTargets(teamID string, seq int) ([]target, []*TeamBinding) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var targets []target
	var bs []*TeamBinding
	for platform, b := range s.teamBound[teamID] {
		if ep, ok := s.adapters[platform]; ok && b.Seq < seq {
			targets = append(targets, target{ep: ep, b: &Binding{Platform: platform, Channel: b.Channel, Thread: b.Thread}})
			bs = append(bs, b)
		}
	}
	return targets, bs
}

// teamSeqPosted notes that b's thread shows the team run's entries up to seq.
func (s *relayState) teamSeqPosted(b *TeamBinding, seq int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b.Seq = max(b.Seq, seq)
}
