package agent

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/daemon/llm"
	"github.com/agentd/agentd/internal/testutil"
)

// Status asked after the model server died says so at once, with the cause and when it
// was seen, instead of the minute-old "reachable" of the last probe.
func TestStatusAsksTheModelServerAgainWhenItsWordIsOld(t *testing.T) {
	h := newHarness(t, func(o *Options) {
		pc, err := llm.NewPool(llm.PoolOptions{Hosts: []llm.HostConfig{{URL: o.LLM.Host()}}, Refresh: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pc.Close)
		o.LLM = pc
	})
	ctx := context.Background()
	testutil.Eventually(t, 10*time.Second, "the first probe's answer", func() bool {
		st, err := h.sup.agentViews.Status(ctx)
		return err == nil && st.Ollama.Reachable
	})
	h.sup.agentViews.fresh = 0 // every status asks: the test does not wait for an answer to age
	died := time.Now()
	h.fake.Close()
	st, err := h.sup.agentViews.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	o := st.Ollama
	if o.Reachable || !strings.Contains(o.Error, "connection refused") || o.CheckedAt.Before(died) {
		t.Errorf("status after the server died: reachable %v, error %q, checked at %v (died at %v)", o.Reachable, o.Error, o.CheckedAt, died)
	}
	if len(o.Hosts) != 1 || o.Hosts[0].Up || o.Hosts[0].CheckedAt.Before(died) {
		t.Errorf("the pool's host after the server died: %+v", o.Hosts)
	}
}
