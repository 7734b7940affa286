package localapi

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/api"
)

// wait fails the test if ch does not deliver within a few seconds.
func wait(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(5 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

func TestEventStream(t *testing.T) {
	tests := []struct {
		name     string
		agent    string
		since    int64
		publish  []api.Event
		wantSeqs []int64
	}{
		{"agent_replays_after_since_then_live", "writer", 1,
			[]api.Event{{Seq: 4, Type: api.EventProposal, AgentID: "a1"}}, []int64{2, 3, 4}},
		{"agent_since_zero_is_live_only", "writer", 0,
			[]api.Event{{Seq: 4, Type: api.EventState, AgentID: "a1"}}, []int64{4}},
		{"agent_skips_other_agents", "a1", 0,
			[]api.Event{{Seq: 4, AgentID: "a2"}, {Seq: 5, AgentID: "a1"}}, []int64{5}},
		{"all_agents", "", 2,
			[]api.Event{{Seq: 4, AgentID: "a2"}, {Seq: 5, AgentID: "a1"}}, []int64{3, 4, 5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake()
			sock, _ := serve(t, f)
			c := &api.Client{Socket: sock}
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			got := make(chan api.Event, 16)
			done := make(chan error, 1)
			go func() {
				done <- c.EventsOpened(ctx, tt.agent, tt.since, nil, func(ev api.Event) error { got <- ev; return nil })
			}()
			wait(t, f.subscribed, "the subscription")
			for _, ev := range tt.publish {
				f.publish(ev)
			}
			for _, want := range tt.wantSeqs {
				select {
				case ev := <-got:
					if ev.Seq != want {
						t.Fatalf("got event seq %d, want %d", ev.Seq, want)
					}
				case <-time.After(5 * time.Second):
					t.Fatalf("timed out waiting for event %d", want)
				}
			}
			cancel()
			if err := <-done; !errors.Is(err, context.Canceled) {
				t.Errorf("Events returned %v, want context.Canceled", err)
			}
			wait(t, f.unsubscribed, "the handler to unsubscribe after the client left")
		})
	}
}

func TestEventStreamEndsWhenChannelCloses(t *testing.T) {
	f := newFake()
	sock, _ := serve(t, f)
	c := &api.Client{Socket: sock}
	done := make(chan error, 1)
	go func() {
		done <- c.EventsOpened(t.Context(), "", 0, nil, func(api.Event) error { return nil })
	}()
	wait(t, f.subscribed, "the subscription")
	f.closeAll()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Events returned %v, want nil at the end of the stream", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("stream did not end when the service closed the channel")
	}
}

func TestEventStreamIsNDJSON(t *testing.T) {
	f := newFake()
	sock, _ := serve(t, f)
	go func() {
		select { // not wait: t.Fatal belongs to the test's own goroutine
		case <-f.subscribed:
		case <-time.After(5 * time.Second):
		}
		f.closeAll()
	}()
	status, hdr, body := rawDo(t, sock, "GET", "/v0/agents/writer/events?since=2", nil, "")
	if status != http.StatusOK {
		t.Fatalf("status = %d", status)
	}
	if ct := hdr.Get("Content-Type"); ct != "application/x-ndjson" {
		t.Errorf("Content-Type = %q, want application/x-ndjson", ct)
	}
	want := `{"seq":3,"type":"state","agent_id":"a1","time":"2026-11-21T09:00:00Z"}` + "\n"
	if body != want {
		t.Errorf("body = %q, want %q", body, want)
	}
	if strings.Count(body, "\n") != 1 {
		t.Errorf("want one line per event")
	}
}
