package agent

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	ollama "github.com/ollama/ollama/api"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/daemon/agent/watchdog"
	"github.com/agentd/agentd/daemon/config"
	"github.com/agentd/agentd/daemon/run"
	"github.com/agentd/agentd/daemon/store"
	"github.com/agentd/agentd/internal/testutil"
)

// loopMetrics records the loops the supervisor reports.
type loopMetrics struct {
	noMetrics
	mu    sync.Mutex
	loops []string
}

func (m *loopMetrics) Loop(kind, action string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.loops = append(m.loops, kind+":"+action)
}

// wait waits for the loops counted, in order, to be want (space-separated): they are
// counted once their transaction commits, just after the state a test waits for.
func (m *loopMetrics) wait(t *testing.T, want string) {
	t.Helper()
	got := ""
	if !testutil.Wait(10*time.Second, func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		got = strings.Join(m.loops, " ")
		return got == want
	}) {
		t.Errorf("loops counted = %q, want %q", got, want)
	}
}

func withCommands(extra ...string) func(*Options) {
	return func(o *Options) { o.Commands = append(append([]string(nil), testCommands...), extra...) }
}

// TestWatchdogStopsEveryLoopShape runs each loop shape through the supervisor with an
// agent granted `y -20`, so only the watchdog can stop it: it is stopped within two
// rounds of the loop, its grant is cancelled, and a person is asked with the loop's kind
// and steps.
func TestWatchdogStopsEveryLoopShape(t *testing.T) {
	list := reply("list_folder", map[string]string{"path": "."})
	notes := reply("read_file", map[string]string{"path": "notes.txt"})
	write := func(path, text string) string {
		return reply("write_file", map[string]string{"path": path, "contents": text})
	}
	tests := []struct {
		name   string
		opt    func(*Options)
		script []string
		loop   func(n int) string
		kind   watchdog.Kind
		start  int // the loop's first step
		period int // steps in one round of it
		caught int // the step the watchdog asks about
	}{
		{name: "repeat", loop: func(int) string { return list }, kind: watchdog.Repeat, start: 1, period: 1, caught: 2},
		{name: "flip_flop", script: []string{write("notes.txt", "buy milk")},
			loop: func(n int) string { return []string{list, notes}[n%2] }, kind: watchdog.Cycle, start: 2, period: 2, caught: 5},
		{name: "period_3", script: []string{write("a", "A"), write("b", "B")},
			loop: func(n int) string {
				return []string{reply("read_file", map[string]string{"path": "a"}), reply("read_file", map[string]string{"path": "./b"}), list}[n%3]
			}, kind: watchdog.Cycle, start: 3, period: 3, caught: 8},
		{name: "failing_missing_files", loop: func(n int) string {
			return reply("read_file", map[string]string{"path": fmt.Sprintf("gone%d.txt", n)})
		}, kind: watchdog.Failing, start: 1, period: 3, caught: 4},
		{name: "no_progress_same_content", opt: func(o *Options) {
			o.Agents = map[string]config.AgentOverride{"tester": {WatchdogIdleSteps: new(4)}}
		}, script: []string{write("c0", "TODO"), write("c1", "TODO"), write("c2", "TODO"), write("c3", "TODO"), write("c4", "TODO")},
			loop: func(n int) string { return reply("read_file", map[string]string{"path": fmt.Sprintf("c%d", n)}) },
			kind: watchdog.NoProgress, start: 7, period: 4, caught: 11},
		{name: "undo_write_delete", opt: withCommands("delete_file"), loop: func(n int) string {
			if n%2 == 0 {
				return write("tmp.txt", "draft")
			}
			return reply("delete_file", map[string]string{"path": "tmp.txt"})
		}, kind: watchdog.Undo, start: 1, period: 2, caught: 4},
		{name: "undo_append_again", opt: withCommands("append_to_file"), loop: func(n int) string {
			if n%2 == 0 {
				return reply("append_to_file", map[string]string{"path": "log.md", "text": "- checked\n"})
			}
			return reply("read_file", map[string]string{"path": "log.md"})
		}, kind: watchdog.Undo, start: 1, period: 2, caught: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var m loopMetrics
			h := newHarness(t, func(o *Options) {
				o.Metrics = &m
				if tt.opt != nil {
					tt.opt(o)
				}
			})
			h.fake.Script(tt.script...)
			h.fake.SetDefaultNth(func(n int) string { return tt.loop(n - 1) }) // tt.loop counts from 0
			a := autoAgent(h, 20)
			want := api.StatePaused
			if tt.kind == watchdog.Repeat {
				want = api.StateAwaitingDecision // asks on the proposal, as ever
			}
			got := h.waitFor(a.ID, "the watchdog's question", func(a *api.Agent) bool { return a.State == want && a.Pending != nil })
			if got.Pending.Step != tt.caught {
				t.Fatalf("asked at step %d (%s), want step %d", got.Pending.Step, got.StateReason, tt.caught)
			}
			if ran := len(h.history(a.ID)); ran != tt.caught-1 || tt.caught-tt.start > 2*tt.period {
				t.Errorf("%d steps ran, %d of the loop; want it stopped within two rounds of %d", ran, tt.caught-tt.start, tt.period)
			}
			for _, part := range []string{fmt.Sprintf("%d approvals left of its y -N grant are cancelled", 20-(tt.caught-1))} {
				if !strings.Contains(got.StateReason, part) {
					t.Errorf("reason %q lacks %q", got.StateReason, part)
				}
			}
			if tt.kind != watchdog.Repeat {
				for _, part := range []string{"(" + string(tt.kind) + ")", fmt.Sprintf("%d: ", tt.caught), "agentctl resume tester"} {
					if !strings.Contains(got.StateReason, part) {
						t.Errorf("reason %q lacks %q", got.StateReason, part)
					}
				}
			}
			if got.Policy.Mode != "ask" || got.Policy.AutoSteps != 0 {
				t.Errorf("policy after the watchdog = %+v, want the grant cancelled", got.Policy)
			}
			noCountGrant(t, h, a.ID)
			entries, err := h.sup.auditLog.Audit(context.Background(), api.AuditQuery{Agent: a.Name})
			if err != nil {
				t.Fatal(err)
			}
			audited := false
			for _, e := range entries {
				audited = audited || e.Kind == "watchdog" && strings.Contains(string(e.Detail), `"kind":"`+string(tt.kind)+`"`)
			}
			if !audited {
				t.Errorf("no watchdog entry of kind %s in the audit log", tt.kind)
			}
			m.wait(t, string(tt.kind)+":ask")
		})
	}
}

// flipFlop is a model going round list_folder . / read_file missing.txt; the smart model
// answers with smart(), when set.
func flipFlop(h *harness, smart func() string) {
	var n atomic.Int64
	h.fake.SetDefault(func(req *ollama.ChatRequest) string {
		if req.Model == "smart" && smart != nil {
			return smart()
		}
		if n.Add(1)%2 == 1 {
			return reply("list_folder", map[string]string{"path": "."})
		}
		return reply("read_file", map[string]string{"path": "missing.txt"})
	})
}

// TestWatchdogRethinksWithTheSmartModelFirst: the smart model thinks again over a caught
// loop, told which; a reply that goes on with the loop counts, and a person is asked.
func TestWatchdogRethinksWithTheSmartModelFirst(t *testing.T) {
	t.Run("same_reply_counts", func(t *testing.T) {
		var m loopMetrics
		h := newHarness(t, func(o *Options) { o.SmartModel, o.Metrics = "smart", &m })
		flipFlop(h, func() string { return reply("read_file", map[string]string{"path": "./missing.txt"}) })
		a := autoAgent(h, 20)
		got := h.waitFor(a.ID, "a pause", func(a *api.Agent) bool { return a.State == api.StatePaused && a.Pending != nil })
		if got.Pending.Step != 5 || got.Pending.Model != "smart" || !strings.Contains(got.StateReason, "(cycle)") {
			t.Fatalf("paused on step %d by %s: %s; want step 5, the smart model's", got.Pending.Step, got.Pending.Model, got.StateReason)
		}
		ps := proposalsOf(t, h, a.ID)
		if ps[3].Status != api.ProposalSuperseded || ps[3].Model == "smart" {
			t.Errorf("step 4 = %s by %s, want the fast model's, superseded by the rethink", ps[3].Status, ps[3].Model)
		}
		var note bool
		for _, r := range h.fake.Requests() {
			note = note || r.Model == "smart" && strings.Contains(joinContent(r.Messages), "The watchdog saw you go round a loop: a cycle of 2 steps")
		}
		if !note {
			t.Error("the smart model was not told which loop it was in")
		}
		m.wait(t, "cycle:rethink cycle:ask")
	})
	t.Run("different_reply_goes_on", func(t *testing.T) {
		var m loopMetrics
		h := newHarness(t, func(o *Options) { o.SmartModel, o.Metrics = "smart", &m })
		flipFlop(h, func() string { return reply("finish", map[string]string{"reason": "nothing to read"}) })
		a := autoAgent(h, 20)
		got := h.waitFor(a.ID, "the end", func(a *api.Agent) bool { return a.State == api.StateIdle })
		if !strings.Contains(got.StateReason, "nothing to read") {
			t.Errorf("reason = %q, want the smart model's finish", got.StateReason)
		}
		m.wait(t, "cycle:rethink") // and no question
	})
}

// TestWatchdogResumeStillAsks: a caught proposal is never approved unasked, not even by
// auto_read after a resume; the person's feedback reaches the model.
func TestWatchdogResumeStillAsks(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.AutoRead = true })
	flipFlop(h, nil)
	a := h.create(api.CreateAgentRequest{})
	got := h.waitFor(a.ID, "a pause", func(a *api.Agent) bool { return a.State == api.StatePaused && a.Pending != nil })
	if got.Pending.Step != 4 || len(h.history(a.ID)) != 3 {
		t.Fatalf("paused at step %d after %d steps; want step 4 after 3", got.Pending.Step, len(h.history(a.ID)))
	}
	if _, err := h.sup.runs.Resume(context.Background(), a.ID); err != nil {
		t.Fatal(err)
	}
	got = h.waitFor(a.ID, "a question", func(a *api.Agent) bool { return a.State == api.StateAwaitingDecision })
	if got.Pending == nil || got.Pending.Step != 4 || len(h.history(a.ID)) != 3 {
		t.Fatalf("after resume: pending %+v, %d steps ran; want step 4 asked about, not run", got.Pending, len(h.history(a.ID)))
	}
	if _, err := h.decide(a.ID, got.Pending, "the file is gone: stop reading it"); err != nil {
		t.Fatal(err)
	}
	h.waitFor(a.ID, "a prompt with the feedback", func(*api.Agent) bool {
		reqs := h.fake.Requests()
		return strings.Contains(joinContent(reqs[len(reqs)-1].Messages), "the file is gone")
	})
}

// TestWatchdogStopsAScheduledRun: nobody watches a schedule's run, so the watchdog stops
// it, and the schedule hears it was stopped by the watchdog.
func TestWatchdogStopsAScheduledRun(t *testing.T) {
	var ends runEnds
	h := newHarness(t, ends.hook)
	var once sync.Once
	var n atomic.Int64
	h.fake.SetDefault(func(*ollama.ChatRequest) string {
		once.Do(func() { // the firing's record, as the scheduler writes it when the run starts
			err := h.st.Tx(context.Background(), func(tx *store.Tx) error {
				ag, err := tx.AgentByName("nightly")
				if err != nil {
					return err
				}
				if err := tx.InsertSchedule(&store.Schedule{Schedule: api.Schedule{ID: "s-1", Name: "nightly", Spec: "@daily",
					Agent: ag.ID, Goal: "look", Autonomy: api.Autonomy{Mode: "auto", Steps: 20}, Delivery: "agentctl", Concurrency: "skip", Missed: "skip"}}); err != nil {
					return err
				}
				return tx.RecordScheduleRun(&api.ScheduleRun{ID: "f-1", ScheduleID: "s-1", Scheduled: time.Now(), RunID: ag.RunID, Outcome: "started"})
			})
			if err != nil {
				t.Error(err)
			}
		})
		if n.Add(1)%2 == 1 {
			return reply("list_folder", map[string]string{"path": "."})
		}
		return reply("read_file", map[string]string{"path": "missing.txt"})
	})
	a, err := h.sup.runs.CreateRun(context.Background(), api.CreateAgentRequest{Name: "nightly", Description: "d", Task: "look"},
		run.Options{Policy: &api.Policy{Mode: "auto", AutoSteps: 20}, By: "schedule nightly"})
	if err != nil {
		t.Fatal(err)
	}
	end := ends.wait(t, a.RunID)
	if end.Outcome != "stopped" || !strings.Contains(end.Reason, "stopped by the watchdog") || !strings.Contains(end.Reason, "(cycle)") || end.Steps != 3 {
		t.Errorf("run end = %+v, want stopped by the watchdog after 3 steps", end)
	}
	got := h.waitFor(a.ID, "idle", func(a *api.Agent) bool { return a.State == api.StateIdle })
	if got.Pending != nil || len(h.history(a.ID)) != 3 {
		t.Errorf("agent = %+v with %d steps run, want idle after 3", got, len(h.history(a.ID)))
	}
}

// TestWatchdogCancelsTheFamilysGrant: a helper draws on its top agent's `y -N`; when the
// helper loops, that grant is what the watchdog cancels.
func TestWatchdogCancelsTheFamilysGrant(t *testing.T) {
	h, b := newHelperHarness(t)
	list, missing := reply("list_folder", map[string]string{"path": "."}), reply("read_file", map[string]string{"path": "missing.txt"})
	b.bossStartsA(list, missing, list, missing, list)
	boss := h.boss()
	if _, err := h.decide(boss.ID, h.pending(boss.ID), "y -10"); err != nil {
		t.Fatal(err)
	}
	a := h.helper("boss/a")
	got := h.waitFor(a.ID, "the helper paused", func(a *api.Agent) bool { return a.State == api.StatePaused && a.Pending != nil })
	if got.Pending.Step != 4 || !strings.Contains(got.StateReason, "(cycle)") || !strings.Contains(got.StateReason, "6 approvals left") {
		t.Errorf("helper paused at step %d: %s; want step 4, a cycle, boss's 6 approvals left cancelled", got.Pending.Step, got.StateReason)
	}
	if top, _ := h.sup.agentViews.Agent(context.Background(), boss.ID); top.Policy.Mode != "ask" || top.Policy.AutoSteps != 0 {
		t.Errorf("boss's policy after its helper looped = %+v, want the grant cancelled", top.Policy)
	}
	noCountGrant(t, h, boss.ID)
}

// TestInvalidRepliesCountAsALoop: the pause after unusable replies in a row is counted
// with the watchdog's loops, under its own kind.
func TestInvalidRepliesCountAsALoop(t *testing.T) {
	var m loopMetrics
	h := newHarness(t, func(o *Options) { o.Metrics = &m })
	h.fake.SetDefault(func(*ollama.ChatRequest) string { return "Sure! I will look around the folder first." })
	a := h.create(api.CreateAgentRequest{})
	h.waitFor(a.ID, "paused", func(a *api.Agent) bool { return a.State == api.StatePaused })
	m.wait(t, "invalid_replies:pause")
}

// noCountGrant checks that the agent's count grants are all revoked, by the watchdog.
func noCountGrant(t *testing.T, h *harness, id string) {
	t.Helper()
	gl, err := h.sup.policyService.Grants(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	revoked := 0
	for _, g := range gl.Grants {
		if g.Kind != api.GrantCount {
			continue
		}
		if g.State != api.GrantRevoked {
			t.Errorf("count grant %s is %s after the watchdog, want revoked", g.Describe(), g.State)
		}
		revoked++
	}
	if revoked == 0 {
		t.Error("no count grant to revoke: the test gave the agent none")
	}
}
