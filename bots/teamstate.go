package bots

import (
	"context"
	"strings"
	"sync"

	"github.com/agentd/agentd/api"
)

// teamDesk is the relay's part for team runs in chat (teams.go): their commands, their
// followers, and which team run each role agent is in. A team run's threads are read from
// the store (Bindings), kept there after the run ends.
//
// Locking rule: mu guards every field declared after it; each method takes it itself and
// calls nothing under it. followWG is Added under mu, with runCtx checked.
type teamDesk struct {
	r      *Relay
	engine Teams // for /agent team; nil without; set before Run (SetTeams)

	mu        sync.Mutex
	roles     map[string]teamRole // role agent → its team run and role
	following map[string]bool     // team runs whose events are followed
	runCtx    context.Context     // Run's, for the team followers
	followWG  sync.WaitGroup      // the team followers
}

func newTeamDesk(r *Relay) *teamDesk {
	return &teamDesk{r: r, roles: map[string]teamRole{}, following: map[string]bool{}}
}

func (s *teamDesk) setRunCtx(ctx context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.runCtx = ctx
}

// targets are the threads, on the platforms of eps, of a role agent's team, labelled
// with its role.
func (s *teamDesk) targets(ctx context.Context, agentID string, eps map[string]*endpoint) []target {
	tr, ok := s.roleOf(agentID)
	if !ok {
		return nil
	}
	var out []target
	for _, b := range s.threadsOf(ctx, tr.team) {
		if ep, ok := eps[b.Platform]; ok {
			out = append(out, target{ep: ep, b: &Binding{Platform: b.Platform, Team: b.Team, Channel: b.Channel, Thread: b.Thread, AgentID: agentID}, label: tr.role})
		}
	}
	return out
}

// removeRole forgets a removed agent's role.
func (s *teamDesk) removeRole(agentID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.roles, agentID)
}

// forgetRoles forgets the role agents of an ended team run, however many of them the
// relay still knows (a removal it missed must not keep them forever).
func (s *teamDesk) forgetRoles(teamID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, tr := range s.roles {
		if tr.team == teamID {
			delete(s.roles, id)
		}
	}
}

// learnTeam notes the role agents of run, the team run teamID as read from the engine,
// and returns their ids; none once the run ended, as its role agents are going.
func (s *teamDesk) learnTeam(teamID string, run *api.TeamRun) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if run.Status != api.TeamRunning {
		return nil // learning them again would keep them in memory
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

// teamOfName returns the followed team run whose role agents' names name has the prefix
// of, for an agent not placed yet; "" otherwise.
func (s *teamDesk) teamOfName(agentID, name string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, known := s.roles[agentID]; known {
		return ""
	}
	var team string
	for id := range s.following {
		if p := teamAgentPrefix(id); p != "" && strings.HasPrefix(name, p) {
			team = id
		}
	}
	return team
}

// roleOf returns the team and role of a role agent.
func (s *teamDesk) roleOf(agentID string) (teamRole, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	tr, ok := s.roles[agentID]
	return tr, ok
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
