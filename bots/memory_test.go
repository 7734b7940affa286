package bots

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/agentd/agentd/api"
)

// memService records the memories the relay adds.
type memService struct {
	Service
	added []api.MemoryAddRequest
}

func (s *memService) AddMemory(_ context.Context, req api.MemoryAddRequest) (*api.Memory, error) {
	s.added = append(s.added, req)
	return &api.Memory{ID: "m-x"}, nil
}

// A chat memory names its speaker and carries the thread's previous words (a person's
// message or the agent's question) as its context; decisions are not remembered and do
// not become context; another agent's thread has its own.
func TestRememberChatKeepsSpeakerAndContext(t *testing.T) {
	ctx := context.Background()
	svc := &memService{}
	r := New(Options{Service: svc})
	r.rememberChat(ctx, "slack", "a-1", User{ID: "U1", Name: "Bo"}, "when is the deadline?")
	r.rememberChat(ctx, "slack", "a-1", User{ID: "U2", Name: "Ana"}, "y")
	r.rememberChat(ctx, "slack", "a-1", User{ID: "U2", Name: "Ana"}, "Friday, not Monday")
	r.rememberChat(ctx, "slack", "a-2", User{ID: "U3"}, "other thread")
	r.words.swap("slack", "a-1", "which branch?")
	r.rememberChat(ctx, "slack", "a-1", User{ID: "U1", Name: "Bo"}, "main")
	want := []api.MemoryAddRequest{
		{Agent: "a-1", Kind: "chat", Text: "when is the deadline?", Source: "slack message from Bo", Speaker: "Bo"},
		{Agent: "a-1", Kind: "chat", Text: "Friday, not Monday", Source: "slack message from Ana", Speaker: "Ana", Context: "when is the deadline?"},
		{Agent: "a-2", Kind: "chat", Text: "other thread", Source: "slack message from U3", Speaker: "U3"},
		{Agent: "a-1", Kind: "chat", Text: "main", Source: "slack message from Bo", Speaker: "Bo", Context: "which branch?"},
	}
	if len(svc.added) != len(want) {
		t.Fatalf("remembered %d messages, want %d: %+v", len(svc.added), len(want), svc.added)
	}
	for i := range want {
		if svc.added[i] != want[i] {
			t.Errorf("memory %d = %+v, want %+v", i, svc.added[i], want[i])
		}
	}
}

// The context kept is the end of a long message, cut on a rune boundary.
func TestLastWordsKeepsTheEnd(t *testing.T) {
	var l lastWords
	long := strings.Repeat("é", contextBytes) + " the end"
	l.swap("slack", "a-1", long)
	got := l.swap("slack", "a-1", "next")
	if len(got) > contextBytes || !strings.HasSuffix(got, " the end") || !strings.HasPrefix(got, "é") {
		t.Errorf("context = %q (%d bytes), want at most %d bytes ending in the message's end", got, len(got), contextBytes)
	}
}

// relayMem is the binding world's daemon with long-term memory.
type relayMem struct {
	*daemonFake
	mu    sync.Mutex
	added []api.MemoryAddRequest
}

func (s *relayMem) AddMemory(_ context.Context, req api.MemoryAddRequest) (*api.Memory, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.added = append(s.added, req)
	return &api.Memory{ID: "m-x"}, nil
}

// Through the relay: an answer to the agent's question is remembered with the question as
// its context and the person who wrote it as its speaker.
func TestAnswerRememberedWithItsQuestion(t *testing.T) {
	w := newBindingWorld(t)
	mem := &relayMem{daemonFake: w.svc}
	w.r = New(Options{Service: mem, Bindings: w.binds})
	w.r.Add(w.ad, Rules{Channels: map[string]Access{"C1": {}, "C2": {}}, Approvers: Access{Users: []string{"U1"}}})
	w.ask("Which folder holds the minutes?")
	w.say(w.ad.stamp(), "", "docs/minutes")
	mem.mu.Lock()
	defer mem.mu.Unlock()
	want := api.MemoryAddRequest{Agent: "a-1", Kind: "chat", Text: "docs/minutes", Source: "slack message from U1", Speaker: "U1",
		Context: "Which folder holds the minutes?"}
	if len(mem.added) != 1 || mem.added[0] != want {
		t.Errorf("remembered %+v, want %+v", mem.added, want)
	}
}
