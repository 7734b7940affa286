package chatstore

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/daemon/store"
)

// openTier returns the relay's records in a store holding n bound agents, each with a
// thread and an open proposal message, and as many unbound helpers.
func openTier(b *testing.B, n int) Bindings {
	b.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(b.TempDir(), "agentd.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	ws := b.TempDir()
	err = st.Tx(ctx, func(tx *store.Tx) error {
		for i := range n {
			id, helper, run := fmt.Sprintf("a-%d", i), fmt.Sprintf("h-%d", i), fmt.Sprintf("r-%d", i)
			for _, a := range []*store.Agent{
				{Agent: api.Agent{ID: id, Name: id, State: api.StateAwaitingDecision, Workspace: ws, RunID: run, Policy: api.Policy{Mode: "ask"}}},
				{Agent: api.Agent{ID: helper, Name: helper, State: api.StateThinking, Workspace: ws, ParentID: id, Policy: api.Policy{Mode: "ask"}}},
			} {
				if err := tx.InsertAgent(a); err != nil {
					return err
				}
			}
			if err := tx.StartRun(run, id, "task"); err != nil {
				return err
			}
			p := &api.Proposal{ID: "p-" + id, AgentID: id, RunID: run, Step: 1, Command: "read_file",
				Args: json.RawMessage(`{"path":"x"}`), Hash: "h", Status: api.ProposalPending}
			if err := tx.InsertProposal(p); err != nil {
				return err
			}
			thread := fmt.Sprintf("T%d", i)
			if err := tx.Bind(&store.Binding{Platform: "slack", Channel: "C1", Thread: thread, AgentID: id, RunID: run}); err != nil {
				return err
			}
			if err := tx.SetChatMessage(&store.ChatMessage{ProposalID: p.ID, Platform: "slack", Kind: "proposal", Channel: "C1", Message: thread + ".1"}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return New(st)
}

// BenchmarkEventReads measures the store reads the relay makes for one agent event, at
// a small tier and at the large one (10,000 bound agents with open messages): where the
// event goes (ThreadsOf, for a bound agent and for a helper that goes to its parent's
// thread) and what a run's end closes (OpenMessages). The two tiers should cost the same.
func BenchmarkEventReads(b *testing.B) {
	for _, n := range []int{10, 10_000} {
		b.Run(fmt.Sprintf("agents_%d", n), func(b *testing.B) { benchEventReads(b, n) })
	}
}

func benchEventReads(b *testing.B, n int) {
	s := openTier(b, n)
	ctx := context.Background()
	for _, c := range []struct {
		name string
		read func(i int) (int, error)
	}{
		{"threads_of_bound", func(i int) (int, error) {
			bs, err := s.ThreadsOf(ctx, fmt.Sprintf("a-%d", i))
			return len(bs), err
		}},
		{"threads_of_helper", func(i int) (int, error) {
			bs, err := s.ThreadsOf(ctx, fmt.Sprintf("h-%d", i))
			return len(bs), err
		}},
		{"open_messages", func(i int) (int, error) {
			ms, err := s.OpenMessages(ctx, fmt.Sprintf("a-%d", i))
			return len(ms), err
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			i := 0
			for b.Loop() {
				n, err := c.read(i * 7919 % n) // spread over the table
				if err != nil || n != 1 {
					b.Fatalf("read %d rows, err %v; want 1", n, err)
				}
				i++
			}
		})
	}
}
