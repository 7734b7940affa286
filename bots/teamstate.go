package bots

import (
	"context"
	"strings"
	"sync"

	"github.com/agentd/agentd/api"
)

// teamDesk is the relay's part for team runs in chat (teams.go): their commands and
// their followers. Which team run and role a role agent is in is read from the engine
// each time (roleOf), and a team run's threads from the store (Bindings), kept there
// after the run ends.
//
// Locking rule: mu guards every field declared after it; each method takes it itself and
// calls nothing under it. followWG is Added under mu, with runCtx checked.
type teamDesk struct {
	r      *Relay
	engine Teams // for /agent team; nil without; set before Run (SetTeams)

	mu        sync.Mutex
	following map[string]bool // team runs whose events are followed
	runCtx    context.Context // Run's, for the team followers
	followWG  sync.WaitGroup  // the team followers
}

func newTeamDesk(r *Relay) *teamDesk {
	return &teamDesk{r: r, following: map[string]bool{}}
}

func (s *teamDesk) setRunCtx(ctx context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.runCtx = ctx
}

// targets are the threads, on the platforms of eps, of a role agent's team, labelled
// with its role; a is the agent when the caller has it (a removal's event), else nil.
func (s *teamDesk) targets(ctx context.Context, agentID string, a *api.Agent, eps map[string]*endpoint) []target {
	tr, ok := s.roleOf(ctx, agentID, a)
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

// roleOf returns the team run and role of agent agentID (a, when the caller has it,
// else the daemon's): the team run whose role agents' names its name has the prefix of
// (team.AgentName) and that lists it among its agents, while the run goes on and for
// teamForgetAfter after its end (a removal the relay missed must not keep it there).
func (s *teamDesk) roleOf(ctx context.Context, agentID string, a *api.Agent) (teamRole, bool) {
	if s.engine == nil {
		return teamRole{}, false
	}
	if a == nil {
		var err error
		if a, err = s.r.opt.Service.Agent(ctx, agentID); err != nil {
			return teamRole{}, false // removed: its removal's event names it
		}
	}
	if !strings.HasPrefix(a.Name, "t") || !strings.Contains(a.Name, "-") {
		return teamRole{}, false // no role agent's name: no need to list the runs
	}
	runs, err := s.engine.Teams(ctx)
	if err != nil {
		s.r.log.Error("bots: listing team runs to place a role agent", "agent", agentID, "err", err)
		return teamRole{}, false
	}
	for _, run := range runs {
		p := teamAgentPrefix(run.ID)
		if p == "" || !strings.HasPrefix(a.Name, p) || run.Status != api.TeamRunning && s.r.opt.Now().Sub(run.EndedAt) >= teamForgetAfter {
			continue
		}
		for role, id := range run.Agents {
			if id == agentID {
				return teamRole{team: run.ID, role: role}, true
			}
		}
	}
	return teamRole{}, false
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
