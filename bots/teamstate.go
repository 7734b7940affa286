package bots

import (
	"context"
	"strings"
	"sync"

	"github.com/agentd/agentd/api"
)

// teamDesk is the relay's part for team runs in chat (teams.go): their commands, their
// followers and their threads. What it keeps is below.
//
// Locking rule: mu guards every field declared after it; each method takes it itself and
// calls nothing under it. followWG is Added under mu, with runCtx checked.
type teamDesk struct {
	r *Relay

	mu        sync.Mutex
	teamBound map[string]map[string]*TeamBinding // team run → platform → binding
	roles     map[string]teamRole                // role agent → its team run and role
	following map[string]bool                    // team runs whose events are followed
	teamEnded map[string]bool                    // ended team runs kept for their role agents' last events
	engine    Teams                              // for /agent team; nil without
	runCtx    context.Context                    // Run's, for the team followers
	followWG  sync.WaitGroup                     // the team followers
}

func newTeamDesk(r *Relay) *teamDesk {
	return &teamDesk{r: r, teamBound: map[string]map[string]*TeamBinding{}, roles: map[string]teamRole{},
		following: map[string]bool{}, teamEnded: map[string]bool{}}
}

func (s *teamDesk) setTeams(t Teams) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.engine = t
}

func (s *teamDesk) teamService() Teams {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.engine
}

func (s *teamDesk) setRunCtx(ctx context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.runCtx = ctx
}

// targets are the threads, on the platforms of eps, of a role agent's team, labelled
// with its role.
func (s *teamDesk) targets(agentID string, eps map[string]*endpoint) []target {
	s.mu.Lock()
	defer s.mu.Unlock()
	tr, ok := s.roles[agentID]
	if !ok {
		return nil
	}
	var out []target
	for platform, b := range s.teamBound[tr.team] {
		if ep, ok := eps[platform]; ok {
			out = append(out, target{ep: ep, b: &Binding{Platform: platform, Team: b.Team, Channel: b.Channel, Thread: b.Thread, AgentID: agentID}, label: tr.role})
		}
	}
	return out
}

// removeRole forgets a removed agent's role, and its ended team run's threads when it
// was the run's last role agent.
func (s *teamDesk) removeRole(agentID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	tr, isRole := s.roles[agentID]
	delete(s.roles, agentID)
	if isRole && s.teamEnded[tr.team] {
		s.forgetTeam(tr.team) // its last role agent gone
	}
}

// bindTeam caches each b as its team run's thread on its platform.
func (s *teamDesk) bindTeam(bs ...*TeamBinding) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, b := range bs {
		putIn(s.teamBound, b.TeamRunID, b.Platform, b)
	}
}

// markEnded marks a team run ended and forgets its threads unless role agents of it
// remain.
func (s *teamDesk) markEnded(teamID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.teamEnded[teamID] = true
	s.forgetTeam(teamID)
}

// forgetEndedTeam forgets an ended team run's role agents and threads, however many of
// its role agents the relay still knows.
func (s *teamDesk) forgetEndedTeam(teamID string) {
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
func (s *teamDesk) forgetTeam(teamID string) {
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
func (s *teamDesk) learnTeam(teamID string, run *api.TeamRun) []string {
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
func (s *teamDesk) placeRole(agentID string, tr teamRole) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.roles[agentID] = tr
}

// teamOfName returns the bound team run whose role agents' names name has the prefix of,
// for an agent not placed yet; "" otherwise.
func (s *teamDesk) teamOfName(agentID, name string) string {
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
func (s *teamDesk) roleOf(agentID string) (teamRole, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	tr, ok := s.roles[agentID]
	return tr, ok && len(s.teamBound[tr.team]) > 0
}

// startFollowing claims the following of team run teamID and counts its follower in;
// ok is false when it is followed already, or the relay is not running.
func (s *teamDesk) startFollowing(teamID string) (ctx context.Context, teams Teams, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ctx = s.runCtx
	if ctx == nil || ctx.Err() != nil || s.following[teamID] || s.engine == nil {
		return nil, nil, false
	}
	s.following[teamID] = true
	s.followWG.Add(1)
	return ctx, s.engine, true
}

// followEnded is a follower's last call.
func (s *teamDesk) followEnded(teamID string) {
	s.mu.Lock()
	delete(s.following, teamID)
	s.mu.Unlock()
	s.followWG.Done()
}

// waitFollowers returns once every team follower has ended.
func (s *teamDesk) waitFollowers() { s.followWG.Wait() }

// turnTargets returns the threads of team run teamID that have not shown its entry seq
// yet, with their bindings (whose Seq seqPosted advances).
func (s *teamDesk) turnTargets(teamID string, seq int, eps map[string]*endpoint) ([]target, []*TeamBinding) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var targets []target
	var bs []*TeamBinding
	for platform, b := range s.teamBound[teamID] {
		if ep, ok := eps[platform]; ok && b.Seq < seq {
			targets = append(targets, target{ep: ep, b: &Binding{Platform: platform, Channel: b.Channel, Thread: b.Thread}})
			bs = append(bs, b)
		}
	}
	return targets, bs
}

// seqPosted notes that b's thread shows the team run's entries up to seq.
func (s *teamDesk) seqPosted(b *TeamBinding, seq int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b.Seq = max(b.Seq, seq)
}
