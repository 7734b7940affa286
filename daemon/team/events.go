package team

import (
	"context"
	"sync"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/daemon/store"
	"github.com/agentd/agentd/internal/display"
)

// Team runs' events. The engine has its own broker (run.Broker, keyed by the team
// run's id where agents' events have the agent's), so the agents' streams and the chat
// relay see nothing new; a follower of a team run (agentctl team run --follow, a chat
// thread) subscribes here. Events are a view of the store: a stream starts with the
// stored transcript and goes on with what is published after each commit.

// eventText bounds a turn's text in an event; the transcript has it whole.
const eventText = 1000

// publish reports committed transcript entries of run r (and the wait it started).
func (e *Engine) publish(r *store.TeamRun, turns []api.TeamTurn, waiting string) {
	if waiting != "" {
		e.events.Publish(api.Event{Type: api.EventTeam, AgentID: r.ID,
			Team: &api.TeamEvent{TeamID: r.ID, Status: r.Status, Waiting: waiting}})
	}
	for i := range turns {
		e.events.Publish(turnEvent(r, turns[i]))
	}
}

func turnEvent(r *store.TeamRun, t api.TeamTurn) api.Event {
	t.Text = display.Cut(t.Text, eventText, display.Ellipsis)
	ev := &api.TeamEvent{TeamID: r.ID, Status: r.Status, Turn: &t}
	if t.Kind == api.TurnEnd {
		ev.Reason = r.Reason
	}
	return api.Event{Type: api.EventTeam, AgentID: r.ID, Time: t.At, Team: ev}
}

// SubscribeTeam streams a team run's transcript: the entries after seq since, then each
// new one, until the run's end entry (the channel closes after it). Stored entries
// (and the wait the run is in, if any) carry Seq 0; live ones the broker's seq. A follower that falls behind sees the channel
// close before the end and comes back with the last transcript seq it saw.
func (e *Engine) SubscribeTeam(ref string, since int64) (<-chan api.Event, func(), error) {
	ctx := context.Background()
	tr, err := store.Read(ctx, e.st, func(tx *store.Tx) (*store.TeamRun, error) { return teamRun(tx, ref) })
	if err != nil {
		return nil, nil, err
	}
	id := tr.ID
	// Subscribe before reading the transcript, so nothing written in between is missed;
	// what both deliver is dropped by its seq.
	live, unsubscribe := e.events.Subscribe(id, 0)
	var r *store.TeamRun
	var stored []store.TeamTurn
	err = e.st.View(ctx, func(tx *store.Tx) (err error) {
		if r, err = tx.TeamRun(id); err != nil {
			return err
		}
		stored, err = tx.TeamTurns(id, -1)
		return err
	})
	if err != nil {
		unsubscribe()
		return nil, nil, err
	}
	out := make(chan api.Event, len(stored)+16)
	done := make(chan struct{})
	last := int(since)
	ended := false
	for _, t := range stored {
		if t.Seq > last {
			out <- turnEvent(r, t.TeamTurn)
			last = t.Seq
			ended = ended || t.Kind == api.TurnEnd
		}
	}
	if !ended && r.Waiting != "" {
		out <- api.Event{Type: api.EventTeam, AgentID: r.ID, Team: &api.TeamEvent{TeamID: r.ID, Status: r.Status, Waiting: r.Waiting}}
	}
	go func() {
		defer close(out)
		defer unsubscribe()
		if ended {
			return
		}
		for {
			select {
			case <-done:
				return
			case ev, ok := <-live:
				if !ok {
					return
				}
				if t := ev.Team.Turn; t != nil {
					if t.Seq <= last {
						continue
					}
					last = t.Seq
				}
				select {
				case out <- ev:
				case <-done:
					return
				}
				if t := ev.Team.Turn; t != nil && t.Kind == api.TurnEnd {
					return
				}
			}
		}
	}()
	var once sync.Once
	return out, func() { once.Do(func() { close(done) }) }, nil
}
