package agent

import (
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ollama/ollama/api"

	"github.com/agentd/agentd/daemon/client"
)

// TestNoSearchAheadWithoutTheMemoryComponent (review21): finishExecution starts the next
// prompt's memory search whenever long-term memory is on, also for an agent whose
// pipeline leaves the memory component out (DisabledComponents), whose prompt never
// takes it: a full search, on the other core, for nothing, every step.
func TestNoSearchAheadWithoutTheMemoryComponent(t *testing.T) {
	h := newHarness(t, withMemory(t), func(o *Options) { o.DisabledComponents = []string{"memory"} })
	replies := []string{
		reply("write_file", map[string]string{"path": "notes.txt", "contents": strings.Repeat("x ", 50)}),
		reply("read_file", map[string]string{"path": "notes.txt"}),
		reply("list_folder", map[string]string{"path": "."}),
		reply("finish", map[string]string{"reason": "done"}),
	}
	var n atomic.Int32
	h.fake.OnChat(func(*api.ChatRequest) (string, error) {
		return replies[min(int(n.Add(1))-1, len(replies)-1)], nil
	})
	a := h.create(client.CreateAgentRequest{Name: "reader", Description: "reads notes", Task: "Read the notes",
		Policy: &client.Policy{Mode: "auto", AutoSteps: 10}})
	h.waitFor(a.ID, "idle", func(a *client.Agent) bool { return a.State == client.StateIdle })
	ahead := &h.sup.mem.ahead
	ahead.mu.Lock()
	left := ahead.m[a.ID]
	ahead.mu.Unlock()
	if taken := ahead.used.Load() + ahead.stale.Load() + ahead.missed.Load(); taken != 0 || left != nil {
		t.Errorf("memory component off: %d prompts looked for a search ahead, and one is left unused (%v): want none started", taken, left != nil)
	}
}
