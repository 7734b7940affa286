package bots

import (
	"context"
	"strings"
	"testing"

	"github.com/agentd/agentd/daemon/client"
)

// memService records the memories the relay adds.
type memService struct {
	Service
	added []client.MemoryAddRequest
}

func (s *memService) AddMemory(_ context.Context, req client.MemoryAddRequest) (*client.Memory, error) {
	s.added = append(s.added, req)
	return &client.Memory{ID: "m-x"}, nil
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
	want := []client.MemoryAddRequest{
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
