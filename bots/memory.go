package bots

import (
	"context"
	"fmt"

	"github.com/agentd/agentd/daemon/client"
)

// chatMemory is what the relay needs of the daemon's long-term memory: what people write
// in a run's thread is remembered by its agent (kind chat), so a later step can recall it
// even when it was said while the agent was busy. The supervisor has it; a service without
// it is not asked.
type chatMemory interface {
	AddMemory(ctx context.Context, req client.MemoryAddRequest) (*client.Memory, error)
}

// maxChatMemory is the most of one chat message that is remembered, in bytes.
const maxChatMemory = 4000

// rememberChat remembers a person's message in the thread of agentID. Bare decisions
// (y, y -N, n…) carry nothing to recall and are left out. A failure (memory off, say)
// only costs the memory: the message has done its work already.
func (r *Relay) rememberChat(ctx context.Context, platform, agentID string, u User, text string) {
	mem, ok := r.opt.Service.(chatMemory)
	if !ok {
		return
	}
	if d, err := client.ParseDecision(text); err != nil || d.Kind != client.DecisionFeedback {
		return
	}
	who := u.Name
	if who == "" {
		who = u.ID
	}
	_, err := mem.AddMemory(ctx, client.MemoryAddRequest{Agent: agentID, Kind: "chat", Text: cut(text, maxChatMemory),
		Source: fmt.Sprintf("%s message from %s", platform, who)})
	if err != nil {
		r.log.Debug("bots: chat message not remembered", "platform", platform, "agent", agentID, "err", err)
	}
}
