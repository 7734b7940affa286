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
	"github.com/agentd/agentd/daemon/store"
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
			class, key := llm.PriorityOf(r.priority(context.Background(), true))
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
	if class, _ := llm.PriorityOf(r.priority(context.Background(), true)); class != llm.Interactive || r.personNext {
		t.Errorf("the step after it: class %s, person's turn left %v; want interactive, false", class, r.personNext)
	}
	if class, _ := llm.PriorityOf(r.priority(context.Background(), true)); class != llm.Batch {
		t.Errorf("the step after that: class %s, want batch", class)
	}
}

// has reports whether runID is marked as batch work.
func (b *batchRuns) has(runID string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.ids[runID]
}

// TestHelperTakesItsParentsClass checks a helper's model calls queue in the class of the
// run that started it: batch under a scheduled run nobody watches, interactive once a
// person approved the start_agent the parent waits on.
func TestHelperTakesItsParentsClass(t *testing.T) {
	for _, tc := range []struct {
		name                   string
		policy                 api.Policy
		allow                  []string
		wantBatch, wantPersons int
	}{
		// boss: start_agent, finish; helper: finish — all batch.
		{"scheduled_parent_allowed", api.Policy{Mode: "auto", AutoSteps: 5}, []string{"start_agent(*)"}, 3, 0},
		// boss's start_agent (batch) is approved by a person: the helper's step and the
		// boss's next step are theirs.
		{"person_approved_start_agent", api.Policy{Mode: "ask"}, nil, 1, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cc := classCounter{m: metrics.New()}
			h, b := newHelperHarness(t, withPool(t, &cc))
			b.script("boss", reply("start_agent", map[string]string{"name": "a", "task": "t", "prompt": "go"}),
				reply("finish", map[string]string{"reason": "all done"}))
			b.script("boss/a", reply("finish", map[string]string{"reason": "helped"}))
			boss, err := h.sup.runs.CreateRun(context.Background(),
				api.CreateAgentRequest{Name: "boss", Description: "a lead", Task: "get things done"},
				run.Options{Policy: &tc.policy, Allow: tc.allow, By: "schedule s", Source: "schedule"})
			if err != nil {
				t.Fatal(err)
			}
			if tc.policy.Mode == "ask" { // a person approves every step
				h.approve(boss.ID, "start_agent")
				h.approve(h.helper("boss/a").ID, "finish")
				h.approve(boss.ID, "finish")
			}
			h.waitFor(boss.ID, "the boss's run's end", func(a *api.Agent) bool { return a.State == api.StateIdle })
			if bt, in := cc.get(llm.Batch), cc.get(llm.Interactive); bt != tc.wantBatch || in != tc.wantPersons {
				t.Errorf("%d batch and %d interactive calls, want %d and %d", bt, in, tc.wantBatch, tc.wantPersons)
			}
			shownByClass(t, h, &cc)
		})
	}
}

// TestBatchClassSurvivesRestart restarts the daemon while runs await a decision; a rule
// added meanwhile approves them, so their next steps run with no person waiting. A run a
// schedule or a team started stays batch work, and a helper of a scheduled run too: the
// class comes from what is stored, not from memory.
func TestBatchClassSurvivesRestart(t *testing.T) {
	for _, tc := range []struct {
		name string
		// record stores what the starter (scheduler, team engine) records of the run.
		record func(tx *store.Tx, a *api.Agent) error
		helper bool // the run awaiting the decision is a helper's of the run started
		want   llm.Class
	}{
		{"scheduled_run", recordScheduleRun, false, llm.Batch},
		{"team_turn", recordTeamTurn, false, llm.Batch},
		{"helper_of_scheduled_run", recordScheduleRun, true, llm.Batch},
		{"persons_run", nil, false, llm.Interactive},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cc := classCounter{m: metrics.New()}
			h, b := newHelperHarness(t, withPool(t, &cc))
			ctx := context.Background()
			first := "list_folder"
			b.bossStartsA(reply(first, map[string]string{"path": "."}))
			if !tc.helper {
				b.q["boss"] = nil
				b.script("boss", reply(first, map[string]string{"path": "."}))
			}
			opt := run.Options{Policy: &api.Policy{Mode: "ask"}, Allow: []string{"start_agent(*)"}, By: "schedule s", Source: "schedule"}
			if tc.record == nil {
				opt = run.Options{Policy: &api.Policy{Mode: "ask"}, By: "ana", Source: "api"}
			}
			boss, err := h.sup.runs.CreateRun(ctx, api.CreateAgentRequest{Name: "boss", Description: "a lead", Task: "t"}, opt)
			if err != nil {
				t.Fatal(err)
			}
			waiter := boss
			if tc.helper {
				waiter = h.helper("boss/a")
			}
			h.pending(waiter.ID)
			if tc.record != nil {
				if err := h.st.Tx(ctx, func(tx *store.Tx) error { return tc.record(tx, boss) }); err != nil {
					t.Fatal(err)
				}
			}
			before := cc.get(tc.want)
			h.stop()
			b.script(waiter.Name, reply("ask_user", map[string]string{"question": "anything else?"}))
			h.opt.Allow = []string{first + "(*)"}
			h.start()
			h.fake.OnChat(b.reply)
			h.waitFor(waiter.ID, "its step after the rule ran "+first, func(a *api.Agent) bool {
				return a.State == api.StateAwaitingDecision && a.Question != nil
			})
			testutil.Eventually(t, 5*time.Second, "the step's call counted", func() bool { return cc.get(tc.want) == before+1 })
			shownByClass(t, h, &cc)
		})
	}
}

func recordScheduleRun(tx *store.Tx, a *api.Agent) error {
	if err := tx.InsertSchedule(&store.Schedule{Schedule: api.Schedule{ID: "s-1", Name: "s", Spec: "@daily", Agent: a.ID,
		Goal: "t", Autonomy: api.Autonomy{Mode: "auto"}, Delivery: "agentctl", Concurrency: "skip", Missed: "skip"}}); err != nil {
		return err
	}
	now := tx.Now()
	return tx.RecordScheduleRun(&api.ScheduleRun{ID: "f-1", ScheduleID: "s-1", Scheduled: now, Started: now,
		Outcome: "started", AgentID: a.ID, RunID: a.RunID})
}

func recordTeamTurn(tx *store.Tx, a *api.Agent) error {
	return tx.InsertTeamRun(&store.TeamRun{TeamRun: api.TeamRun{ID: "t-1", Workflow: "w", Task: "t", Status: "running",
		Waiting: a.ID}, Source: "name: w", WaitRun: a.RunID})
}

// shownByClass checks status (agentctl status's queue) and the metrics count each class's
// calls as the pool queued them.
func shownByClass(t *testing.T, h *harness, cc *classCounter) {
	t.Helper()
	st, err := h.sup.agentViews.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	served := map[string]int64{}
	for _, q := range st.Ollama.Queue {
		served[q.Class] = q.Served
	}
	waits := map[string]uint64{}
	families, err := cc.m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "agentd_model_queue_wait_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "class" {
					waits[l.GetValue()] = m.GetHistogram().GetSampleCount()
				}
			}
		}
	}
	for _, c := range []llm.Class{llm.Interactive, llm.Batch} {
		n := cc.get(c)
		if served[c.String()] != int64(n) || waits[c.String()] != uint64(n) {
			t.Errorf("%s calls: status shows %d served, metrics %d waits; the pool queued %d", c, served[c.String()], waits[c.String()], n)
		}
	}
}
