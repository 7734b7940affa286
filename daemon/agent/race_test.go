package agent

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	ollama "github.com/ollama/ollama/api"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/daemon/store"
	"github.com/agentd/agentd/internal/testutil"
)

// A per-agent subscription ends when the agent is deleted.
func TestSubscriptionEndsOnDelete(t *testing.T) {
	h := newHarness(t)
	h.fake.Script(reply("list_folder", map[string]string{"path": "."}))
	a := h.create(api.CreateAgentRequest{})
	h.pending(a.ID)
	ch, cancel, err := h.sup.agentViews.Subscribe(a.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()
	if err := h.sup.runs.DeleteAgent(context.Background(), a.ID); err != nil {
		t.Fatal(err)
	}
	timeout := time.After(30 * time.Second) // only a subscription left open ever gets here
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				return
			}
			t.Logf("event %s", ev.Type)
		case <-timeout:
			t.Fatal("subscription to a deleted agent still open after 30s")
		}
	}
}

// A pause racing the loop's policy approval must not be overwritten by execute.
func TestPauseNotLostToPolicyApproval(t *testing.T) {
	h := newHarness(t)
	h.fake.SetDefault(func(r *ollama.ChatRequest) string {
		return reply("list_folder", map[string]string{"path": "."})
	})
	lost := 0
	for i := 0; i < 40; i++ {
		a := h.create(api.CreateAgentRequest{Name: "c" + itoa(i), Description: "d", Goals: []string{"g"},
			Policy: &api.Policy{Mode: "continuous", ContinuousLimit: 1000}})
		// let it run a few steps
		time.Sleep(time.Duration(i%7) * time.Millisecond)
		if _, err := h.sup.runs.Pause(context.Background(), a.ID); err != nil {
			t.Fatal(err)
		}
		// A policy approval in flight must not overwrite the pause meanwhile.
		var got *api.Agent
		testutil.Hold(30*time.Millisecond, func() bool {
			got, _ = h.sup.agentViews.Agent(context.Background(), a.ID)
			return got.State == api.StatePaused
		})
		if got.State != api.StatePaused {
			lost++
			t.Logf("pause lost: state=%s step=%d", got.State, got.Step)
			h.sup.runs.Stop(context.Background(), a.ID)
		}
		h.sup.runs.DeleteAgent(context.Background(), a.ID)
	}
	if lost > 0 {
		t.Fatalf("%d/40 pauses lost", lost)
	}
}

func itoa(i int) string {
	return strings.TrimSpace(strings.Repeat(" ", 0)) + string(rune('a'+i/26%26)) + string(rune('a'+i%26)) + string(rune('a'+i/676))
}

// Pause/resume storms must never leave two loops for one agent.
func loops() int {
	buf := make([]byte, 1<<22)
	n := runtime.Stack(buf, true)
	return strings.Count(string(buf[:n]), "agent.(*runner).loop(")
}

func TestOneLoopPerAgent(t *testing.T) {
	h := newHarness(t)
	h.fake.SetDefault(func(r *ollama.ChatRequest) string { return reply("list_folder", map[string]string{"path": "."}) })
	a := h.create(api.CreateAgentRequest{Policy: &api.Policy{Mode: "continuous", ContinuousLimit: 100000}})
	deadline := time.Now().Add(2 * time.Second)
	most := 0
	for time.Now().Before(deadline) && most < 2 {
		h.sup.runs.Pause(context.Background(), a.ID)
		h.sup.runs.Resume(context.Background(), a.ID)
		if n := loops(); n > most {
			most = n
		}
	}
	if most >= 2 {
		// show the consequence: two open proposals / orphaned pending ones
		h.sup.runs.Pause(context.Background(), a.ID)
		time.Sleep(100 * time.Millisecond)
		ps, _ := h.sup.agentViews.Proposals(context.Background(), a.ID)
		t.Fatalf("%d goroutines in runner.loop for ONE agent (%d proposals so far)", most, len(ps))
	}
}

// Before any probe has answered, the first prompt must not assume MaxContext.
func TestNumCtxWaitsForProbe(t *testing.T) {
	h := newHarness(t)
	h.fake.SetContextLength(2048)
	h.stop()
	h.fake.Script(reply("list_folder", map[string]string{"path": "."}))
	a := h.create(api.CreateAgentRequest{Name: "x", Description: "d", Task: "t"})
	_ = a
	h.start() // Start kicks the agent at once; probeLoop runs concurrently
	h.pending(a.ID)
	r := h.fake.Requests()[0]
	t.Logf("first request num_ctx=%v num_predict=%v", r.Options["num_ctx"], r.Options["num_predict"])
	if r.Options["num_ctx"].(float64) > 2048 {
		t.Fatalf("num_ctx %v sent for a model whose context is 2048", r.Options["num_ctx"])
	}
}

// The repeat watchdog ("ask a person") holds after pause+resume in continuous mode.
func TestRepeatAsksEvenAfterResume(t *testing.T) {
	h := newHarness(t)
	var calls int
	var mu sync.Mutex
	h.fake.SetDefault(func(r *ollama.ChatRequest) string {
		mu.Lock()
		defer mu.Unlock()
		calls++
		if calls <= 2 {
			return reply("test_side_effect", map[string]string{"what": "x"})
		}
		return reply("ask_user", map[string]string{"question": "q"})
	})
	a := h.create(api.CreateAgentRequest{Policy: &api.Policy{Mode: "continuous", ContinuousLimit: 50}})
	got := h.waitFor(a.ID, "repeat question", func(a *api.Agent) bool { return a.Pending != nil && a.StateReason != "" })
	t.Logf("watchdog: %s", got.StateReason)
	before := sideEffects()
	h.sup.runs.Pause(context.Background(), a.ID)
	h.sup.runs.Resume(context.Background(), a.ID)
	testutil.Hold(200*time.Millisecond, func() bool { return sideEffects() == before })
	after := sideEffects()
	if after != before {
		t.Fatalf("the repeated non-idempotent command ran without the person's approval after pause/resume")
	}
}

// Stop while a command runs + kill -9 before its result: after restart the idle agent must
// not carry the old run's proposal into a follow-up task.
func TestTaskSupersedesStaleProposal(t *testing.T) {
	h := newHarness(t)
	a, p := h.proposed(reply("test_side_effect", map[string]string{"what": "x"}))
	// What Stop during the command + kill -9 before finishExecution leaves: agent idle, run ended, proposal started.
	h.startedAtCrash(p, func(tx *store.Tx) error {
		ag, _ := tx.Agent(a.ID)
		ag.State, ag.StateReason = api.StateIdle, "stopped by a person"
		tx.EndRun(ag.RunID, "stopped", "x")
		return tx.UpdateAgent(ag)
	})
	h.start()
	idle := h.waitFor(a.ID, "the agent idle after the restart", func(a *api.Agent) bool { return a.State == api.StateIdle })
	t.Logf("after restart: state=%s reason=%q", idle.State, idle.StateReason)
	h.fake.Script(reply("finish", map[string]string{"reason": "ok"}))
	nt, err := h.sup.runs.Task(context.Background(), a.ID, "something new")
	if err != nil {
		t.Fatal(err)
	}
	got := h.pending(a.ID)
	t.Logf("new run %s; pending proposal %s of run %s (%s)", nt.RunID, got.ID, got.RunID, got.Status)
	if got.RunID != nt.RunID {
		t.Fatalf("the new run shows the old run's interrupted proposal %s", got.ID)
	}
}

// A command whose result could not be stored (the store refused the write) is shown to a
// person as interrupted, never left as a started proposal nobody can decide.
func TestLostResultBecomesInterrupted(t *testing.T) {
	h := newHarness(t)
	a, p := h.proposed(reply("test_side_effect", map[string]string{"what": "x"}))
	// the state finishExecution's failed Tx leaves, with the loop still running
	h.st.Tx(context.Background(), func(tx *store.Tx) error {
		tx.SetProposalStatus(p.ID, api.ProposalStarted, nil)
		ag, _ := tx.Agent(a.ID)
		ag.State = api.StateExecuting
		return tx.UpdateAgent(ag)
	})
	h.sup.kick(a.ID)
	// The loop takes up the lost result: the agent leaves executing.
	var got *api.Agent
	testutil.Wait(10*time.Second, func() bool {
		got, _ = h.sup.agentViews.Agent(context.Background(), a.ID)
		return got.State != api.StateExecuting
	})
	_, derr := h.decide(a.ID, p, "y")
	aerr := h.sup.decisions.Answer(context.Background(), a.ID, api.AnswerRequest{Text: "x"})
	t.Logf("state=%s pending=%v question=%v decide=%v answer=%v", got.State, got.Pending != nil, got.Question != nil, derr, aerr)
	if got.State == api.StateAwaitingDecision && got.Pending == nil && got.Question == nil {
		t.Fatal("agent awaiting_decision with nothing to decide")
	}
}
