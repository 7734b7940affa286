package bots

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/internal/testutil"
)

// fakeTeams serves team runs whose transcripts are given up front; each subscription
// gets them all, then its channel closes, as the engine's does after a run's end.
type fakeTeams struct {
	unusedTeams // the methods not needed here
	runs        map[string]*api.TeamRun
	turns       map[string][]api.TeamTurn
}

func (f *fakeTeams) Team(_ context.Context, ref string) (*api.TeamRun, error) {
	if r, ok := f.runs[ref]; ok {
		return r, nil
	}
	return nil, api.Errorf(api.ErrNotFound, "no team run %q", ref)
}

func (f *fakeTeams) Teams(context.Context) ([]api.TeamRun, error) {
	var out []api.TeamRun
	for _, r := range f.runs {
		out = append(out, *r)
	}
	return out, nil
}

func (f *fakeTeams) SubscribeTeam(ref string, since int64) (<-chan api.Event, func(), error) {
	ch := make(chan api.Event, len(f.turns[ref]))
	for _, t := range f.turns[ref] {
		if int64(t.Seq) > since {
			ch <- api.Event{Type: api.EventTeam, Team: &api.TeamEvent{TeamID: ref, Turn: &t}}
		}
	}
	close(ch)
	return ch, func() {}, nil
}

type unusedTeams = Teams

// teamRelay is a relay following the team runs of teams, each bound to a thread of C1
// named after it.
func teamRelay(t *testing.T, svc Service, teams *fakeTeams) (*Relay, *fakeAdapter) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	binds := &memBindings{msgs: map[string]*ChatMessage{}, agents: svc}
	r := New(Options{Service: svc, Bindings: binds})
	ad := &fakeAdapter{}
	r.Add(ad, Rules{Channels: map[string]Access{"C1": {}}, Approvers: Access{Users: []string{"U1"}}})
	r.SetTeams(teams)
	r.out.start(ctx)
	r.teams.setRunCtx(ctx)
	for id := range teams.runs {
		binds.BindTeam(ctx, TeamBinding{TeamRunID: id, Platform: "slack", Channel: "C1", Thread: "T-" + id})
	}
	return r, ad
}

// placed reports whether the relay still places role agents in team run id's threads.
func (r *Relay) placed(id string) bool {
	for _, agentID := range r.teams.engine.(*fakeTeams).runs[id].Agents {
		if tr, ok := r.teams.roleOf(context.Background(), agentID, nil); ok && tr.team == id {
			return true
		}
	}
	return false
}

// roleCount counts the role agents the relay places in any team run's threads.
func (r *Relay) roleCount() int {
	n := 0
	for _, run := range r.teams.engine.(*fakeTeams).runs {
		for _, agentID := range run.Agents {
			if _, ok := r.teams.roleOf(context.Background(), agentID, nil); ok {
				n++
			}
		}
	}
	return n
}

// followed follows the team runs and waits until their followers have seen them end.
func (r *Relay) followed(t *testing.T, ids ...string) {
	for _, id := range ids {
		r.teams.followTeam(id, 0)
	}
	testutil.Eventually(t, 5*time.Second, "the followers to end", func() bool { return r.teams.followers() == 0 })
	r.out.flush()
}

// TestEndedTeamRunsRolesPostUntilRemoved: once a team run ends, its role agents' last
// events still reach its thread (read from the store), until they are removed; then the
// relay places none of them any more.
func TestEndedTeamRunsRolesPostUntilRemoved(t *testing.T) {
	end := func(seq int) api.TeamTurn {
		return api.TeamTurn{Seq: seq, Kind: api.TurnEnd, Mode: api.TeamFinished, Text: "no next state"}
	}
	svc := &helperService{agents: []api.Agent{{ID: "a-2", Name: "t1-programmer", State: api.StateThinking}}}
	teams := &fakeTeams{
		runs: map[string]*api.TeamRun{
			"t-1": {ID: "t-1", Status: api.TeamFinished, EndedAt: time.Now(), Agents: map[string]string{"programmer": "a-2"}},
			"t-2": {ID: "t-2", Status: api.TeamFinished, EndedAt: time.Now()},
		},
		turns: map[string][]api.TeamTurn{
			"t-1": {{Seq: 1, Kind: api.TurnMessage, Role: "programmer", AgentID: "a-2", Text: "done"}, end(2)},
			"t-2": {end(1)},
		},
	}
	r, ad := teamRelay(t, svc, teams)
	r.followed(t, "t-1", "t-2")
	if r.placed("t-2") {
		t.Error("t-2 ended with no role agents, yet the relay places role agents in it")
	}
	if !r.placed("t-1") || len(r.posts.targets(context.Background(), "a-2")) != 1 {
		t.Fatal("t-1's thread was lost while its role agent, not yet removed, may still post there")
	}
	svc.agents = nil // the daemon removed it, then tells
	r.posts.handle(context.Background(), api.Event{Type: api.EventRemoved, AgentID: "a-2"})
	if r.placed("t-1") || len(r.posts.targets(context.Background(), "a-2")) != 0 {
		t.Error("t-1's last role agent is removed, yet the relay still places it in t-1's thread")
	}
	roles := r.roleCount()
	r.out.flush()
	posts := strings.Join(ad.posts, "\n")
	if roles != 0 || strings.Contains(posts, "was removed") || strings.Count(posts, "🏁 Team run finished") != 2 {
		t.Errorf("roles left: %d; posts:\n%s", roles, posts)
	}
}

// TestEndedTeamRunsRolesForgottenLater: a role agent whose removal the relay never sees
// stays placed in its ended team's thread for teamForgetAfter at most.
func TestEndedTeamRunsRolesForgottenLater(t *testing.T) {
	defer func(d time.Duration) { teamForgetAfter = d }(teamForgetAfter)
	teamForgetAfter = 20 * time.Millisecond
	svc := &helperService{agents: []api.Agent{{ID: "a-3", Name: "t3-writer"}}}
	teams := &fakeTeams{
		runs:  map[string]*api.TeamRun{"t-3": {ID: "t-3", Status: api.TeamStopped, EndedAt: time.Now(), Agents: map[string]string{"writer": "a-3"}}},
		turns: map[string][]api.TeamTurn{"t-3": {{Seq: 1, Kind: api.TurnEnd, Mode: api.TeamStopped, Text: "stopped"}}},
	}
	r, _ := teamRelay(t, svc, teams)
	r.followed(t, "t-3")
	testutil.Eventually(t, 5*time.Second, "t-3's role agents forgotten", func() bool { return !r.placed("t-3") })
	if _, ok := r.teams.roleOf(context.Background(), "a-3", nil); ok {
		t.Error("the role agent of a forgotten team run is still placed in its thread")
	}
	if n := r.roleCount(); n != 0 {
		t.Errorf("role agents in memory: %d", n)
	}
}
