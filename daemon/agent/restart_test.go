package agent

import (
	"context"
	"fmt"
	"testing"
	"time"

	ollama "github.com/ollama/ollama/api"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/daemon/store"
)

// What a restart brings back: agents awaiting a decision, helpers and the parents waiting
// on them; and a start that never gives an agent a second loop.

func TestHelperWaitSurvivesRestart(t *testing.T) {
	h, b := newHelperHarness(t)
	b.bossStartsA(reply("finish", map[string]string{"reason": "done while you were away"}))
	boss := h.boss()
	start := h.approve(boss.ID, "start_agent")
	a := h.helper("boss/a")
	hp := h.pending(a.ID)

	// The daemon stops while the parent waits.
	h.stop()
	h.start()
	h.fake.OnChat(b.reply)
	if got, _ := h.sup.agentViews.Agent(context.Background(), boss.ID); got.State != api.StateExecuting {
		t.Fatalf("boss after restart: %s (%s), want executing", got.State, got.StateReason)
	}
	if _, err := h.decide(a.ID, hp, "y"); err != nil {
		t.Fatal(err)
	}
	if ep := h.episode(boss.ID, start); ep.Result != "helper a finished: done while you were away" {
		t.Fatalf("episode = %+v", ep)
	}
}

func TestHelperEndWhileDownIsDeliveredOnce(t *testing.T) {
	h, b := newHelperHarness(t)
	b.bossStartsA(reply("write_file", map[string]string{"path": "x", "contents": "x"}))
	boss := h.boss()
	start := h.approve(boss.ID, "start_agent")
	a := h.helper("boss/a")
	h.pending(a.ID)
	h.stop()
	// The helper's end was committed, and the daemon died before delivering it.
	err := h.st.Tx(context.Background(), func(tx *store.Tx) error {
		ha, err := tx.Agent(a.ID)
		if err != nil {
			return err
		}
		ha.State, ha.StateReason = api.StateIdle, "finished: ended offline"
		if err := tx.UpdateAgent(ha); err != nil {
			return err
		}
		return tx.EndRun(ha.RunID, "finished", "ended offline")
	})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		h.start()
		h.fake.OnChat(b.reply)
		if ep := h.episode(boss.ID, start); ep.Result != "helper a finished: ended offline" {
			t.Fatalf("episode = %+v", ep)
		}
		h.stop()
	}
}

func TestStartAgentWithoutWaitIsInterruptedOnRestart(t *testing.T) {
	h, _ := newHelperHarness(t)
	boss := h.boss()
	h.stop()
	// The daemon died after start_agent was started and before its helper was recorded.
	err := h.st.Tx(context.Background(), func(tx *store.Tx) error {
		a, err := tx.Agent(boss.ID)
		if err != nil {
			return err
		}
		a.State, a.Step = api.StateExecuting, 1
		if err := tx.UpdateAgent(a); err != nil {
			return err
		}
		return tx.InsertProposal(&api.Proposal{ID: "p-x", AgentID: a.ID, RunID: a.RunID, Step: 1, Command: commands.StartAgent,
			Args: []byte(`{"name":"a","task":"t","prompt":"go"}`), Hash: "h", Status: api.ProposalStarted})
	})
	if err != nil {
		t.Fatal(err)
	}
	h.start()
	got := h.waitFor(boss.ID, "interrupted", func(a *api.Agent) bool { return a.Pending != nil })
	if got.Pending.Status != api.ProposalInterrupted || got.State != api.StateAwaitingDecision {
		t.Fatalf("boss = %s, pending %+v", got.State, got.Pending)
	}
}

// TestRestartStopsHelpersOfEndedRuns: the daemon died after the parent's run ended and
// before its helpers were stopped; the restarted supervisor stops them, with the reason.
func TestRestartStopsHelpersOfEndedRuns(t *testing.T) {
	h, b := newHelperHarness(t)
	b.script("boss",
		reply("start_agent", map[string]string{"name": "a", "task": "t", "prompt": "go"}),
		reply("start_agent", map[string]string{"name": "b", "task": "t", "prompt": "go"}))
	b.script("boss/a", reply("finish", map[string]string{"reason": "a done"}),
		reply("write_file", map[string]string{"path": "y", "contents": "y"}))
	b.script("boss/b", reply("write_file", map[string]string{"path": "x", "contents": "x"}))
	ctx := context.Background()
	boss := h.boss()
	h.approve(boss.ID, "start_agent")
	a := h.helper("boss/a")
	h.approve(a.ID, "finish")
	second := h.approve(boss.ID, "start_agent")
	bh := h.helper("boss/b")
	h.pending(bh.ID)
	h.stop()

	// What Stop commits for the parent, without the stopHelpers that follows it.
	err := h.st.Tx(ctx, func(tx *store.Tx) error {
		if _, err := tx.DeleteWait(second.ID); err != nil {
			return err
		}
		msg := "withdrawn: the run was stopped"
		if _, err := tx.SetProposalStatus(second.ID, api.ProposalFailed, &msg, api.ProposalStarted); err != nil {
			return err
		}
		pa, err := tx.Agent(boss.ID)
		if err != nil {
			return err
		}
		pa.State, pa.StateReason = api.StateIdle, "stopped by a person"
		if err := tx.UpdateAgent(pa); err != nil {
			return err
		}
		return tx.EndRun(pa.RunID, "stopped", "stopped by a person")
	})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond) // the next run starts in a later millisecond
	// Then a person gave the idle helper a a task of its own: it is not the parent's.
	err = h.st.Tx(ctx, func(tx *store.Tx) error {
		ha, err := tx.Agent(a.ID)
		if err != nil {
			return err
		}
		if err := newRunTx(tx, ha, "write y"); err != nil {
			return err
		}
		return tx.UpdateAgent(ha)
	})
	if err != nil {
		t.Fatal(err)
	}

	h.start()
	h.fake.OnChat(b.reply)
	got, _ := h.sup.agentViews.Agent(ctx, bh.ID)
	if got.State != api.StateIdle || got.StateReason != strayParentEnded {
		t.Fatalf("helper of an ended run after restart: %s (%s), want idle (%s)", got.State, got.StateReason, strayParentEnded)
	}
	if len(got.Runs) == 0 || got.Runs[0].Outcome != "stopped" || got.Runs[0].Reason != strayParentEnded {
		t.Fatalf("its run = %+v, want stopped with the reason", got.Runs)
	}
	if p := h.pending(a.ID); p.Command != "write_file" {
		t.Fatalf("helper with a person's task after restart: pending %s, want write_file", p.Command)
	}
}

func TestRestartStopsHelpersWhoseParentIsGone(t *testing.T) {
	h, b := newHelperHarness(t)
	b.bossStartsA(reply("write_file", map[string]string{"path": "x", "contents": "x"}))
	ctx := context.Background()
	boss := h.boss()
	h.approve(boss.ID, "start_agent")
	a := h.helper("boss/a")
	h.pending(a.ID)
	h.stop()
	if err := h.st.Tx(ctx, func(tx *store.Tx) error { return tx.DeleteAgent(boss.ID) }); err != nil {
		t.Fatal(err)
	}
	h.start()
	got, err := h.sup.agentViews.Agent(ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != api.StateIdle || got.StateReason != strayParentGone || got.Pending != nil {
		t.Fatalf("helper of a removed parent after restart: %s (%s), pending %v", got.State, got.StateReason, got.Pending)
	}
}

// TestRestartStartsAgentsAwaitingDecisions restarts a supervisor on agents awaiting
// decisions, with a rule added while it was down: their loops, started paced after the
// others, still take their first round, so the rule approves and runs every proposal.
func TestRestartStartsAgentsAwaitingDecisions(t *testing.T) {
	h := newHarness(t)
	h.fake.SetDefault(func(*ollama.ChatRequest) string { return reply("list_folder", map[string]string{"path": "."}) })
	const n = 3*startPaced + 1
	var ids []string
	for i := range n {
		a := h.create(api.CreateAgentRequest{Name: fmt.Sprintf("waiter-%02d", i), Description: "d", Task: "t"})
		h.pending(a.ID)
		ids = append(ids, a.ID)
	}
	h.stop()
	h.fake.SetDefault(func(*ollama.ChatRequest) string { return reply("finish", map[string]string{"reason": "done"}) })
	h.opt.Allow = []string{"list_folder(*)"}
	h.start()
	for _, id := range ids {
		h.waitFor(id, "its list_folder run by the new rule", func(a *api.Agent) bool {
			ps, err := h.sup.agentViews.Proposals(context.Background(), a.ID)
			if err != nil {
				return false
			}
			for _, p := range ps {
				if p.Command == "list_folder" && p.Status == api.ProposalSucceeded {
					return true
				}
			}
			return false
		})
	}
}

// TestStartLoopNeverStartsASecondLoop checks the paced start leaves an agent whose loop
// a decision or task started meanwhile alone, and reports the round of one it started.
func TestStartLoopNeverStartsASecondLoop(t *testing.T) {
	h := newHarness(t)
	a := h.create(api.CreateAgentRequest{Name: "idle-one", Description: "d"}) // no task: idle, no loop
	rounded := make(chan struct{})
	if !startLoop(h.sup, a.ID, func() { close(rounded) }) {
		t.Fatal("startLoop did not start the idle agent's loop")
	}
	<-rounded // its first round found nothing to do, and said so

	// An agent awaiting a decision: its loop runs, waiting for the person.
	h.fake.SetDefault(func(*ollama.ChatRequest) string { return reply("list_folder", map[string]string{"path": "."}) })
	w := h.create(api.CreateAgentRequest{Name: "waiting-one", Description: "d", Task: "t"})
	h.pending(w.ID)
	if startLoop(h.sup, w.ID, func() { t.Error("rounded called for a loop startLoop did not start") }) {
		t.Error("startLoop started a second loop beside a running one")
	}
}
