package team

import (
	"context"
	"strings"
	"testing"
	"time"

	ollama "github.com/ollama/ollama/api"

	"github.com/agentd/agentd/api"
)

// collect reads a team stream until it closes.
func collect(t *testing.T, ch <-chan api.Event) []api.Event {
	t.Helper()
	var out []api.Event
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				return out
			}
			out = append(out, ev)
		case <-timeout:
			t.Fatalf("the stream did not close; got %d events", len(out))
		}
	}
}

// A team run's stream has every transcript entry once, in order, with its role, state,
// phase and kind, then the end with the run's status and reason, and closes.
func TestTeamEventsFollowTheTranscript(t *testing.T) {
	e := newEnv(t)
	e.say("ceo", "Instruction: pick a language for a word counter.", "Instruction: write main.", "<INFO> main.go counts words")
	e.say("cto", "<INFO> Go", "Solution: package main // counts words")
	// Held back until the follower subscribed, so the stream sees turns as they come.
	gate := make(chan struct{})
	e.fake.OnChat(func(req *ollama.ChatRequest) (string, error) {
		<-gate
		return e.reply(req)
	})
	team := e.run("pair.toml", "a word counter")
	ch, cancel, err := e.eng.SubscribeTeam(team.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()
	close(gate)
	evs := collect(t, ch)
	r := e.ended(team.ID)
	if len(evs) != len(r.Transcript) {
		t.Fatalf("%d events for %d transcript entries", len(evs), len(r.Transcript))
	}
	live := 0
	for i, ev := range evs {
		want := r.Transcript[i]
		got := ev.Team.Turn
		if ev.Type != api.EventTeam || ev.AgentID != team.ID || ev.Team.TeamID != team.ID || got == nil ||
			got.Seq != want.Seq || got.Kind != want.Kind || got.Role != want.Role || got.State != want.State ||
			got.Phase != want.Phase || got.Text != want.Text || got.Mode != want.Mode {
			t.Errorf("event %d: %+v %+v, want turn %+v", i, ev, got, want)
		}
		if ev.Seq > 0 {
			live++
		}
	}
	if live == 0 {
		t.Error("no event was published live: the stream only replayed the store")
	}
	end := evs[len(evs)-1].Team
	if end.Turn.Kind != api.TurnEnd || end.Status != api.TeamFinished || !strings.Contains(end.Reason, "state code led to the end") {
		t.Errorf("end event: %+v", end)
	}
	// After the end, a new stream replays from since and closes.
	ch, cancel2, err := e.eng.SubscribeTeam(team.ID, int64(r.Transcript[2].Seq))
	if err != nil {
		t.Fatal(err)
	}
	defer cancel2()
	if again := collect(t, ch); len(again) != len(r.Transcript)-3 || again[0].Team.Turn.Seq != r.Transcript[3].Seq {
		t.Errorf("replay since %d: %d events", r.Transcript[2].Seq, len(again))
	}
	if _, _, err := e.eng.SubscribeTeam("t-nope", 0); err == nil || !strings.Contains(err.Error(), `no team run "t-nope"`) {
		t.Errorf("unknown team: %v", err)
	}
}

// The stream says which role agent the team waits for, and a stop ends it with its reason.
func TestTeamEventsWaitAndStop(t *testing.T) {
	e := newEnv(t)
	team := e.startHello(withCommands)
	ch, cancel, err := e.eng.SubscribeTeam(team.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()
	a := e.awaiting(team.ID, "programmer", "write_file")
	if _, err := e.eng.StopTeam(context.Background(), team.ID); err != nil {
		t.Fatal(err)
	}
	evs := collect(t, ch)
	var waiting string
	for _, ev := range evs {
		if ev.Team.Waiting != "" {
			waiting = ev.Team.Waiting
		}
	}
	if waiting != a.ID {
		t.Errorf("waiting = %q, want %s", waiting, a.ID)
	}
	end := evs[len(evs)-1].Team
	if end.Turn == nil || end.Turn.Kind != api.TurnEnd || end.Status != api.TeamStopped || end.Reason != "stopped by a person" {
		t.Errorf("end event: %+v", end)
	}
}
