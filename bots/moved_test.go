package bots

import (
	"context"
	"testing"
)

// TestThreadMoved: a run's thread continued in a new one is bound there too (stored, and
// where the relay posts from now on); the old thread keeps its binding; a thread bound to
// nothing moves nothing.
func TestThreadMoved(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name      string
		from      string
		wantMoved bool
		wantPost  string // the thread the agent's events go to afterwards
	}{
		{"bound_thread_moves", "T1", true, "T2"},
		{"unbound_thread_moves_nothing", "T9", false, "T1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			binds := &memBindings{msgs: map[string]*ChatMessage{},
				bs: []*Binding{{Platform: "slack", Channel: "C1", Thread: "T1", AgentID: "a-1", RunID: "r-1"}}, agents: &helperService{}}
			r := New(Options{Service: &helperService{}, Bindings: binds})
			r.Add(&fakeAdapter{}, Rules{Channels: map[string]Access{"C1": {}}})

			moved, err := r.ThreadMoved(ctx, "slack", "C1", tc.from, "T2")
			if err != nil || moved != tc.wantMoved {
				t.Fatalf("moved = %v, %v; want %v", moved, err, tc.wantMoved)
			}
			ts := r.posts.targets(context.Background(), "a-1")
			if len(ts) != 1 || ts[0].b.Thread != tc.wantPost {
				t.Fatalf("targets = %+v, want thread %s", ts, tc.wantPost)
			}
			if b, _ := binds.BindingByThread(ctx, "slack", "C1", "T1"); b == nil || b.AgentID != "a-1" {
				t.Errorf("the old thread lost its binding: %+v", b)
			}
			b, _ := binds.BindingByThread(ctx, "slack", "C1", "T2")
			if tc.wantMoved != (b != nil) || b != nil && (b.AgentID != "a-1" || b.RunID != "r-1") {
				t.Errorf("the new thread's stored binding = %+v", b)
			}
			wantTo := ""
			if tc.wantMoved {
				wantTo = "T2"
			}
			if to, err := r.MovedTo(ctx, "slack", "C1", "T1"); to != wantTo || err != nil {
				t.Errorf("MovedTo(T1) = %q, %v; want %q", to, err, wantTo)
			}
		})
	}
}
