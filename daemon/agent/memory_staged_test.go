package agent

import (
	"context"
	"sync/atomic"
	"testing"

	ollama "github.com/ollama/ollama/api"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/daemon/store"
)

// TestFileMemoriesCommitWithTheResult checks that a written file's memories are stored in
// the step's result transaction (one durable commit per step, not two): handed to the
// runner, not written by the component, and stored with the episode's stamp.
func TestFileMemoriesCommitWithTheResult(t *testing.T) {
	h := newHarness(t, withMemory(t))
	var n atomic.Int32
	h.fake.OnChat(func(*ollama.ChatRequest) (string, error) {
		if n.Add(1) == 1 {
			return reply("write_file", map[string]string{"path": "notes/a.txt", "contents": "alpha file"}), nil
		}
		return reply("finish", map[string]string{"reason": "done"}), nil
	})
	a := h.create(api.CreateAgentRequest{Name: "writer", Description: "writes", Task: "write a file",
		Policy: &api.Policy{Mode: "auto", AutoSteps: 10}})
	h.waitFor(a.ID, "idle", func(a *api.Agent) bool { return a.State == api.StateIdle })
	var file, episode *store.Memory
	ms := storedMemories(t, h.st, a.ID)
	for i, m := range ms {
		switch {
		case m.Kind == "file":
			file = &ms[i]
		case m.Kind == "episode" && m.Source == "step 1 write_file":
			episode = &ms[i]
		}
	}
	if file == nil || episode == nil {
		t.Fatalf("memories %+v: want the file's and step 1's", ms)
	}
	if !file.Created.Equal(episode.Created) {
		t.Errorf("file memory stored at %v, step 1's episode at %v: want one transaction", file.Created, episode.Created)
	}

	// The component itself only stages the write when the runner gives it a place.
	comp := memoryComponent{mem: h.sup.mem, st: h.sup.st, memory: h.sup.memoryService, history: h.sup.episodeHistory, model: &h.sup.model}
	var staged stagedWrites
	o := &commands.Outcome{Command: "write_file", Args: []byte(`{"path":"b.txt","contents":"bravo"}`)}
	step := &commands.Step{AgentID: a.ID}
	if err := comp.AfterExecute(withStagedWrites(context.Background(), &staged), step, o); err != nil {
		t.Fatal(err)
	}
	count := func() int {
		c := 0
		for _, m := range storedMemories(t, h.st, a.ID) {
			if m.Source == "b.txt" {
				c++
			}
		}
		return c
	}
	if len(staged.fns) != 1 || count() != 0 {
		t.Fatalf("staged %d writes, %d memories of b.txt stored: want 1 staged, none stored", len(staged.fns), count())
	}
	if err := h.st.Tx(context.Background(), staged.fns[0]); err != nil {
		t.Fatal(err)
	}
	if count() != 1 {
		t.Errorf("after the staged write: %d memories of b.txt, want 1", count())
	}
}
