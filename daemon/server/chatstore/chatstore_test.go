package chatstore

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/bots"
	"github.com/agentd/agentd/daemon/store"
)

func open(t *testing.T) Bindings {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "agentd.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	// Messages belong to proposals, which belong to an agent's run.
	err = st.Tx(context.Background(), func(tx *store.Tx) error {
		a := &store.Agent{Agent: api.Agent{ID: "a-1", Name: "one", State: api.StateThinking, Workspace: t.TempDir(), RunID: "r-1",
			Policy: api.Policy{Mode: "ask"}}}
		if err := tx.InsertAgent(a); err != nil {
			return err
		}
		if err := tx.StartRun("r-1", a.ID, "task"); err != nil {
			return err
		}
		for i, id := range []string{"p-1", "p-2"} {
			if err := tx.InsertProposal(&api.Proposal{ID: id, AgentID: a.ID, RunID: "r-1", Step: i + 1, Command: "read_file",
				Args: json.RawMessage(`{"path":"x"}`), Hash: "h", Status: api.ProposalPending}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return New(st)
}

// A reply names the message it answers by the platform's id; the relay finds the
// proposal or question behind it, and nothing for any other message.
func TestMessageAt(t *testing.T) {
	ctx := context.Background()
	s := open(t)
	for _, m := range []bots.ChatMessage{
		{ProposalID: "p-1", Platform: "discord", Kind: "proposal", Channel: "C1", Message: "1001"},
		{ProposalID: "p-2", Platform: "discord", Kind: "question", Channel: "C1", Message: "1002"},
	} {
		if err := s.SetMessage(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name, platform, channel, message string
		want                             string
	}{
		{"proposal", "discord", "C1", "1001", "p-1 proposal"},
		{"question", "discord", "C1", "1002", "p-2 question"},
		{"other_message", "discord", "C1", "1003", ""},
		{"other_channel", "discord", "C2", "1001", ""},
		{"other_platform", "slack", "C1", "1001", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := s.MessageAt(ctx, tc.platform, tc.channel, tc.message)
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			if m != nil {
				got = m.ProposalID + " " + m.Kind
			}
			if got != tc.want {
				t.Errorf("MessageAt = %q, want %q", got, tc.want)
			}
		})
	}
}

// A refused chat action lands in the audit log under the agent it named.
func TestAuditRefusedChatAction(t *testing.T) {
	ctx := context.Background()
	s := open(t)
	e := bots.AuditEvent{Platform: "slack", Channel: "C1", Thread: "T1", User: "U1", Action: "approve",
		AgentID: "a-2", ThreadAgent: "a-1", ProposalID: "p-9", Reason: "the button names another agent than its thread's"}
	if err := s.Audit(ctx, e); err != nil {
		t.Fatal(err)
	}
	err := s.st.View(ctx, func(tx *store.Tx) error {
		entries, err := tx.AuditEntries(store.AuditFilter{AgentID: "a-2"})
		if err != nil {
			return err
		}
		if len(entries) != 1 || entries[0].Kind != bots.AuditKind {
			t.Fatalf("entries = %+v", entries)
		}
		var got bots.AuditEvent
		if err := json.Unmarshal(entries[0].Detail, &got); err != nil || got != e {
			t.Errorf("detail = %s (%v), want %+v", entries[0].Detail, err, e)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestBindingKeepsTheRunsEnd: the post that showed a run's end is kept on the thread's
// binding, so a relay started later still refuses text written before it.
func TestBindingKeepsTheRunsEnd(t *testing.T) {
	s, ctx := open(t), context.Background()
	b := bots.Binding{Platform: "slack", Channel: "C1", Thread: "100.1", AgentID: "a-1", RunID: "r-1", EndPost: "100.9", EndRun: "r-1"}
	if err := s.Bind(ctx, b); err != nil {
		t.Fatal(err)
	}
	got, err := s.BindingByThread(ctx, "slack", "C1", "100.1")
	if err != nil || got == nil || got.EndPost != "100.9" || got.EndRun != "r-1" {
		t.Fatalf("binding = %+v, %v; want end post 100.9 of r-1", got, err)
	}
	all, err := s.Bindings(ctx)
	if err != nil || len(all) != 1 || all[0].EndPost != "100.9" {
		t.Errorf("bindings = %+v, %v", all, err)
	}
}
