package run

import (
	"testing"

	"github.com/agentd/agentd/api"
)

// A follower that reconnects with the last seq it saw gets what it missed, only its
// agent's events, and its stream closes when the agent is removed.
func TestBrokerReplaysAndClosesOnRemoval(t *testing.T) {
	b := NewBroker()
	b.Publish(api.Event{AgentID: "a", Type: api.EventState})
	b.Publish(api.Event{AgentID: "b", Type: api.EventState})
	third := b.Publish(api.Event{AgentID: "a", Type: api.EventState})
	ch, cancel := b.Subscribe("a", 1)
	defer cancel()
	if ev := <-ch; ev.Seq != third.Seq || ev.AgentID != "a" {
		t.Fatalf("replay = %+v, want seq %d of agent a", ev, third.Seq)
	}
	b.Publish(api.Event{AgentID: "a", Type: api.EventRemoved})
	if ev := <-ch; ev.Type != api.EventRemoved {
		t.Fatalf("event = %+v, want removed", ev)
	}
	if _, open := <-ch; open {
		t.Fatal("the stream of a removed agent stays open")
	}
}

// TestBrokerSeqReplaysWhatCameAfter: subscribing since Seq() read earlier replays every
// event published in between, and nothing before.
func TestBrokerSeqReplaysWhatCameAfter(t *testing.T) {
	b := NewBroker()
	if b.Seq() != 0 {
		t.Fatalf("a new broker's seq = %d, want 0", b.Seq())
	}
	b.Publish(api.Event{Type: api.EventState, AgentID: "a"})
	seq := b.Seq()
	b.Publish(api.Event{Type: api.EventFinish, AgentID: "a"})
	ch, cancel := b.Subscribe("a", seq)
	defer cancel()
	if ev := <-ch; ev.Type != api.EventFinish || ev.Seq != seq+1 {
		t.Errorf("replayed %+v, want the finish published after seq %d", ev, seq)
	}
}
