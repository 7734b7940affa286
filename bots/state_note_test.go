package bots

import (
	"context"
	"fmt"
	"testing"

	"github.com/agentd/agentd/api"
)

// A thread is told when its agent pauses or fails, once per change the daemon makes: a
// state event the daemon marks as showing the state unchanged (a policy edit, a late
// step's end) posts no note, even to a relay that never told the thread of that state.
func TestAStateNoteOnlyWhenTheDaemonChangedTheState(t *testing.T) {
	ctx := context.Background()
	svc := &helperService{agents: []api.Agent{{ID: "a-1", Name: "boss", State: api.StateThinking}}}
	r, ad := threadRelay(ctx, svc)
	paused := &api.Agent{ID: "a-1", Name: "boss", State: api.StatePaused, StateReason: "paused by a person"}
	failed := &api.Agent{ID: "a-1", Name: "boss", State: api.StateFailed, StateReason: "model gone"}
	for _, ev := range []api.Event{
		{Type: api.EventState, AgentID: "a-1", Agent: failed, Unchanged: true},
		{Type: api.EventState, AgentID: "a-1", Agent: paused},
		{Type: api.EventState, AgentID: "a-1", Agent: paused, Unchanged: true, Message: "policy changed"},
		{Type: api.EventState, AgentID: "a-1", Agent: failed},
		{Type: api.EventState, AgentID: "a-1", Agent: failed, Unchanged: true},
	} {
		r.posts.handle(ctx, ev)
	}
	r.out.flush()
	ad.mu.Lock()
	defer ad.mu.Unlock()
	if got, want := fmt.Sprint(ad.posts), "[C1 T1 ⏸ Paused: paused by a person C1 T1 ⚠️ Failed: model gone]"; got != want {
		t.Errorf("posts = %s\nwant %s", got, want)
	}
}
