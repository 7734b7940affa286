package agent

import (
	"testing"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/daemon/llm"
	"github.com/agentd/agentd/internal/backoff"
)

// An agent waiting for the model resumes when the pool finds its host back, not when its
// own backoff ends: here the backoff is an hour, so only the wake-up can resume it.
func TestAgentResumesWhenItsModelsHostComesBack(t *testing.T) {
	h := newHarness(t, func(o *Options) {
		pc, err := llm.NewPool(llm.PoolOptions{Hosts: []llm.HostConfig{{URL: o.LLM.Host()}},
			Backoff: backoff.Policy{Base: 20 * time.Millisecond, Max: 50 * time.Millisecond}, Refresh: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pc.Close)
		o.LLM = pc
		o.Backoff = func(int) time.Duration { return time.Hour }
	})
	h.fake.SetDown(true)
	a := h.create(api.CreateAgentRequest{})
	h.waitFor(a.ID, "waiting_for_model", func(a *api.Agent) bool { return a.State == api.StateWaitingForModel })
	h.fake.Script(reply("list_folder", map[string]string{"path": "."}))
	h.fake.SetDown(false)
	p := h.pending(a.ID)
	if p.Command != "list_folder" {
		t.Errorf("pending %s, want the scripted list_folder", p.Command)
	}
}
