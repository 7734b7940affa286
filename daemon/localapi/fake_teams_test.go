package localapi

import (
	"context"

	"github.com/agentd/agentd/daemon/client"
)

// The fake's team runs: one, t1, running in state design. It keeps just enough rules to
// return each kind of error.

func fakeTeam() client.TeamRun {
	return client.TeamRun{ID: "t1", Workflow: "pair", Task: "a word counter", Status: client.TeamRunning, State: "design",
		Phase: "choose_language", Vars: map[string]string{"task": "a word counter"}, Turns: 1, MaxTurns: 40, CreatedAt: t0, UpdatedAt: t0,
		Transcript: []client.TeamTurn{{Seq: 1, Kind: client.TurnMessage, State: "design", Phase: "choose_language", Role: "ceo",
			Text: "Instruction: pick a language.", At: t0}}}
}

func (f *fakeService) teamsRoute(ctx context.Context, _ string, _ client.None) ([]client.TeamRun, error) {
	t := fakeTeam()
	t.Transcript = nil
	return []client.TeamRun{t}, nil
}

func (f *fakeService) startTeamRoute(ctx context.Context, _ string, req client.TeamRunRequest) (*client.TeamRun, error) {
	if req.Workflow == "" {
		return nil, client.Errorf(client.ErrBadRequest, "empty workflow: send the workflow file's content")
	}
	t := fakeTeam()
	t.ID, t.Task, t.Transcript, t.Turns = "t2", req.Task, nil, 0
	return &t, nil
}

func (f *fakeService) teamRoute(ctx context.Context, ref string, _ client.None) (*client.TeamRun, error) {
	if ref != "t1" {
		return nil, client.Errorf(client.ErrNotFound, "no team run %q", ref)
	}
	t := fakeTeam()
	return &t, nil
}

func (f *fakeService) stopTeamRoute(ctx context.Context, ref string, _ client.None) (*client.TeamRun, error) {
	t, err := f.teamRoute(ctx, ref, client.None{})
	if err != nil {
		return nil, err
	}
	t.Status, t.Reason = client.TeamStopped, "stopped by a person"
	return t, nil
}

func (f *fakeService) planTeamRoute(ctx context.Context, _ string, req client.TeamPlanRequest) (*client.TeamPlan, error) {
	if req.Task == "" {
		return nil, client.Errorf(client.ErrBadRequest, "empty task: say what the team should do")
	}
	return &client.TeamPlan{Workflow: "name = \"planned\"\n", Revised: true, Problems: []string{"no summarizing role"}}, nil
}

func (f *fakeService) SubscribeTeam(ref string, since int64) (<-chan client.Event, func(), error) {
	t, err := f.teamRoute(context.Background(), ref, client.None{})
	if err != nil {
		return nil, nil, err
	}
	ch := make(chan client.Event, len(t.Transcript))
	for i := range t.Transcript {
		if turn := t.Transcript[i]; int64(turn.Seq) > since {
			ch <- client.Event{Type: client.EventTeam, AgentID: t.ID, Team: &client.TeamEvent{TeamID: t.ID, Status: t.Status, Turn: &turn}}
		}
	}
	close(ch)
	return ch, func() {}, nil
}
