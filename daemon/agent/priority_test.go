package agent

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/daemon/llm"
	"github.com/agentd/agentd/daemon/metrics"
	"github.com/agentd/agentd/daemon/run"
	"github.com/agentd/agentd/internal/testutil"
)

// classCounter counts the model calls of each class the pool let through, and passes
// their waits on to m, when set, as the daemon's metrics hook does (server/metrics.go).
type classCounter struct {
	mu sync.Mutex
	n  map[llm.Class]int
	m  *metrics.Metrics
}

func (c *classCounter) seen(cl llm.Class, d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[llm.Class]int{}
	}
	c.n[cl]++
	c.m.QueueWait(cl.String(), d)
}

func (c *classCounter) get(cl llm.Class) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[cl]
}

// withPool puts the harness's fake behind a pool whose queue reports to cc.
func withPool(t *testing.T, cc *classCounter) func(*Options) {
	return func(o *Options) {
		pc, err := llm.NewPool(llm.PoolOptions{Hosts: []llm.HostConfig{{URL: o.LLM.Host(), Slots: 2}}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pc.Close)
		pc.Pool().ObserveQueue(cc.seen)
		o.LLM = pc
	}
}

func TestModelPriorityFollowsWhoWaits(t *testing.T) {
	var cc classCounter
	h := newHarness(t, withPool(t, &cc))
	listForever(h)
	ctx := context.Background()

	// A run the daemon started (a schedule, a team turn) queues as batch work.
	a, err := h.sup.runs.CreateRun(ctx, api.CreateAgentRequest{Name: "nightly", Description: "d", Task: "look around"},
		run.Options{Budget: run.Budget{MaxSteps: 2}, Policy: &api.Policy{Mode: "auto", AutoSteps: 2}, By: "schedule s", Source: "schedule"})
	if err != nil {
		t.Fatal(err)
	}
	h.waitFor(a.ID, "the run's end", func(a *api.Agent) bool { return a.State == api.StateIdle })
	if b, i := cc.get(llm.Batch), cc.get(llm.Interactive); b != 2 || i != 0 {
		t.Errorf("scheduled run: %d batch and %d interactive calls, want 2 and 0", b, i)
	}
	// The run's end is handled once it is committed, after the agent shows idle.
	testutil.Eventually(t, 10*time.Second, "the ended run forgotten as batch work", func() bool { return !h.sup.batchRuns.has(a.RunID) })

	// A person's run is interactive.
	p := h.create(api.CreateAgentRequest{Name: "mine", Description: "d", Task: "look around"})
	h.pending(p.ID)
	if i := cc.get(llm.Interactive); i != 1 {
		t.Errorf("a person's run: %d interactive calls, want 1", i)
	}

	// A scheduled run a person answers: the step after their feedback is theirs.
	s, err := h.sup.runs.StartTask(ctx, "nightly", "again", run.Options{Policy: &api.Policy{Mode: "ask"}, By: "schedule s", Source: "schedule"})
	if err != nil {
		t.Fatal(err)
	}
	prop := h.pending(s.ID)
	if b := cc.get(llm.Batch); b != 3 {
		t.Errorf("scheduled step before feedback: %d batch calls, want 3", b)
	}
	if _, err := h.decide(s.ID, prop, "try another folder"); err != nil {
		t.Fatal(err)
	}
	h.waitFor(s.ID, "the step after feedback", func(a *api.Agent) bool {
		return a.State == api.StateAwaitingDecision && a.Pending != nil && a.Pending.ID != prop.ID
	})
	if i, b := cc.get(llm.Interactive), cc.get(llm.Batch); i != 2 || b != 3 {
		t.Errorf("after feedback: %d interactive and %d batch calls, want 2 and 3", i, b)
	}
}

func TestModelPriorityClass(t *testing.T) {
	for _, tc := range []struct {
		name       string
		batch      bool
		personNext bool
		want       llm.Class
	}{
		{"person_run", false, false, llm.Interactive},
		{"scheduled_run", true, false, llm.Batch},
		{"scheduled_run_after_feedback", true, true, llm.Interactive},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &Supervisor{batchRuns: &batchRuns{}}
			if tc.batch {
				s.batchRuns.mark("r-1")
			}
			r := &runner{s: s, id: "a-1", modelTurn: modelTurn{runID: "r-1", personNext: tc.personNext}}
			class, key := llm.PriorityOf(r.modelPriority(context.Background()))
			if class != tc.want || key != "a-1" {
				t.Errorf("class %s key %q, want %s a-1", class, key, tc.want)
			}
			if r.personNext {
				t.Error("personNext not consumed by the step it was for")
			}
		})
	}
}

func TestCommandModelCallsLeaveThePersonsTurn(t *testing.T) {
	s := &Supervisor{batchRuns: &batchRuns{}}
	s.batchRuns.mark("r-1")
	r := &runner{s: s, id: "a-1", modelTurn: modelTurn{runID: "r-1", personNext: true}}
	if class, _ := llm.PriorityOf(r.priority(context.Background(), false)); class != llm.Interactive || !r.personNext {
		t.Errorf("a command's call after a person's decision: class %s, person's turn left %v; want interactive, true", class, r.personNext)
	}
	if class, _ := llm.PriorityOf(r.modelPriority(context.Background())); class != llm.Interactive || r.personNext {
		t.Errorf("the step after it: class %s, person's turn left %v; want interactive, false", class, r.personNext)
	}
	if class, _ := llm.PriorityOf(r.modelPriority(context.Background())); class != llm.Batch {
		t.Errorf("the step after that: class %s, want batch", class)
	}
}

// has reports whether runID is marked as batch work.
func (b *batchRuns) has(runID string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.ids[runID]
}
