package bots

import (
	"context"
	"fmt"
	"sync"

	"github.com/agentd/agentd/api"
)

// chatMemory is what the relay needs of the daemon's long-term memory: what people write
// in a run's thread is remembered by its agent (kind chat), so a later step can recall it
// even when it was said while the agent was busy. The supervisor has it; a service without
// it is not asked.
type chatMemory interface {
	AddMemory(ctx context.Context, req api.MemoryAddRequest) (*api.Memory, error)
}

// maxChatMemory is the most of one chat message that is remembered, in bytes.
const maxChatMemory = 4000

// rememberChat remembers a person's message in the thread of agentID, with its speaker
// (the person's display name) and the thread's previous words as its context. Bare
// decisions (y, y -N, n…) carry nothing to recall and are left out. A failure (memory off,
// say) only costs the memory: the message has done its work already.
func (r *Relay) rememberChat(ctx context.Context, platform, agentID string, u User, text string) {
	mem, ok := r.opt.Service.(chatMemory)
	if !ok {
		return
	}
	if d, err := api.ParseDecision(text); err != nil || d.Kind != api.DecisionFeedback {
		return
	}
	who := u.Name
	if who == "" {
		who = u.ID
	}
	text = cut(text, maxChatMemory)
	prev := r.words.swap(platform, agentID, text)
	_, err := mem.AddMemory(ctx, api.MemoryAddRequest{Agent: agentID, Kind: "chat", Text: text,
		Source: fmt.Sprintf("%s message from %s", platform, who), Speaker: who, Context: prev})
	if err != nil {
		r.log.Debug("bots: chat message not remembered", "platform", platform, "agent", agentID, "err", err)
	}
}

// lastWords keeps the last thing said in each agent's thread (a person's message, or the
// agent's question), to remember beside the next message as its context: a short answer
// ("Friday, not Monday") is then found by the question's words. The words are kept without
// their speaker's name: in the next message's context it would make "what did Ana say"
// find the reply to Ana rather than Ana's own words.
type lastWords struct {
	mu sync.Mutex
	m  map[string]string // platform|agent → the last words said
}

// maxLastWords bounds lastWords; past it the map starts over (a lost context only costs
// the next message's context, never the message).
const maxLastWords = 4096

// contextBytes is how much of the previous words is kept: the index reads only their end.
const contextBytes = 600

// swap records words as the thread's last and returns what was last before.
func (l *lastWords) swap(platform, agentID, words string) string {
	key := platform + "|" + agentID
	l.mu.Lock()
	defer l.mu.Unlock()
	prev := l.m[key]
	if l.m == nil || len(l.m) >= maxLastWords {
		l.m = map[string]string{}
	}
	l.m[key] = tail(words, contextBytes)
	return prev
}

// tail is the last n bytes of s at most, cut at a rune boundary.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := len(s) - n
	for i < len(s) && s[i]&0xC0 == 0x80 {
		i++
	}
	return s[i:]
}
