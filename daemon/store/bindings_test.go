package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/agentd/agentd/api"
)

func TestBindingsSurviveReopen(t *testing.T) {
	s, path := open(t)
	a := seed(t, s)
	mustTx(t, s, func(tx *Tx) error {
		if err := tx.Bind(&Binding{Platform: "slack", Team: "T1", Channel: "C1", Thread: "100.1", AgentID: a.ID, RunID: "r-1", CreatedBy: "U1", EndPost: "100.9", EndRun: "r-1"}); err != nil {
			return err
		}
		return tx.SetChatMessage(&ChatMessage{ProposalID: "p-1", Platform: "slack", Kind: "proposal", Channel: "C1", Message: "100.2"})
	})
	s2 := reopen(t, s, path)
	mustView(t, s2, func(tx *Tx) error {
		b, err := tx.BindingByThread("slack", "C1", "100.1")
		if err != nil {
			return err
		}
		if b.AgentID != a.ID || b.RunID != "r-1" || b.Team != "T1" || b.CreatedBy != "U1" || b.EndPost != "100.9" || b.EndRun != "r-1" {
			t.Errorf("binding = %+v", b)
		}
		all, err := tx.Bindings()
		if err != nil || len(all) != 1 {
			t.Errorf("bindings = %v, %v", all, err)
		}
		m, err := tx.ChatMessage("p-1", "slack", "proposal")
		if err != nil {
			return err
		}
		if m.Channel != "C1" || m.Message != "100.2" {
			t.Errorf("message = %+v", m)
		}
		if _, err := tx.ChatMessage("p-1", "discord", "proposal"); !errors.Is(err, ErrNotFound) {
			t.Errorf("other platform: %v", err)
		}
		at, err := tx.ChatMessageAt("slack", "C1", "100.2")
		if err != nil {
			return err
		}
		if at.ProposalID != "p-1" || at.Kind != "proposal" {
			t.Errorf("message at 100.2 = %+v", at)
		}
		for _, other := range [][3]string{{"slack", "C1", "100.1"}, {"slack", "C2", "100.2"}, {"discord", "C1", "100.2"}} {
			if _, err := tx.ChatMessageAt(other[0], other[1], other[2]); !errors.Is(err, ErrNotFound) {
				t.Errorf("message at %v: %v, want not found", other, err)
			}
		}
		return nil
	})
}

func TestBindingsKeepTheLatestPerAgent(t *testing.T) {
	s, a := seeded(t)
	ctx := context.Background()
	for i, thread := range []string{"1.0", "2.0"} {
		s.now = func() func() time.Time { n := time.UnixMilli(int64(1000 + i)); return func() time.Time { return n } }()
		if err := s.Tx(ctx, func(tx *Tx) error {
			return tx.Bind(&Binding{Platform: "slack", Channel: "C1", Thread: thread, AgentID: a.ID})
		}); err != nil {
			t.Fatal(err)
		}
	}
	s.View(ctx, func(tx *Tx) error {
		all, err := tx.Bindings()
		if err != nil || len(all) != 1 || all[0].Thread != "2.0" {
			t.Errorf("bindings = %+v, %v", all, err)
		}
		return nil
	})
}

// TestChatDeliveriesRememberedAndBounded: a delivery is new once per platform and scope,
// after a reopen too; a scope keeps its last keys only, without pushing out another's.
func TestChatDeliveriesRememberedAndBounded(t *testing.T) {
	s, path := open(t)
	ctx := context.Background()
	first := func(s *Store, platform, scope, key string) bool {
		t.Helper()
		var ok bool
		if err := s.Tx(ctx, func(tx *Tx) (err error) { ok, err = tx.FirstDelivery(platform, scope, key, 3); return err }); err != nil {
			t.Fatal(err)
		}
		return ok
	}
	for _, c := range []struct {
		platform, scope, key string
		want                 bool
	}{
		{"slack", "", "m1", true}, {"slack", "", "m1", false},
		{"discord", "", "m1", true}, {"slack", "refused", "m1", true},
		{"slack", "", "m2", true}, {"slack", "", "m3", true},
		{"slack", "refused", "x1", true}, {"slack", "refused", "x2", true}, {"slack", "refused", "x3", true},
		{"slack", "", "m2", false}, // the refused flood pushed out none of the approvers'
		{"slack", "", "m4", true},  // the fourth pushes out the oldest, m1
		{"slack", "", "m1", true},
	} {
		if got := first(s, c.platform, c.scope, c.key); got != c.want {
			t.Errorf("FirstDelivery(%s, %q, %s) = %v, want %v", c.platform, c.scope, c.key, got, c.want)
		}
	}
	s2 := reopen(t, s, path)
	if first(s2, "slack", "", "m4") || first(s2, "discord", "", "m1") {
		t.Error("a delivery recorded before the reopen was new again")
	}
}

// A team run's thread survives a reopen; its seq only moves forward; an ended run's
// binding is no longer listed (nothing to follow) but its thread is still found.
func TestTeamBindings(t *testing.T) {
	s, path := open(t)
	mustTx(t, s, func(tx *Tx) error {
		for _, id := range []string{"t-1", "t-2"} {
			if err := tx.InsertTeamRun(&TeamRun{TeamRun: api.TeamRun{ID: id, Workflow: "w", Task: "x", Status: api.TeamRunning, State: "a"}, Source: "s"}); err != nil {
				return err
			}
		}
		if err := tx.BindTeam(&TeamBinding{TeamRunID: "t-1", Platform: "slack", Team: "T1", Channel: "C1", Thread: "100.1", CreatedBy: "U1"}); err != nil {
			return err
		}
		if err := tx.BindTeam(&TeamBinding{TeamRunID: "t-2", Platform: "slack", Channel: "C1", Thread: "100.2"}); err != nil {
			return err
		}
		if err := tx.SetTeamSeq("t-1", "slack", 5); err != nil {
			return err
		}
		if err := tx.SetTeamSeq("t-1", "slack", 3); err != nil { // late: ignored
			return err
		}
		r, err := tx.TeamRun("t-2")
		if err != nil {
			return err
		}
		r.Status = api.TeamFinished
		return tx.UpdateTeamRun(r)
	})
	s2 := reopen(t, s, path)
	mustView(t, s2, func(tx *Tx) error {
		all, err := tx.TeamBindings()
		if err != nil {
			return err
		}
		if len(all) != 1 || all[0].TeamRunID != "t-1" || all[0].Seq != 5 || all[0].Team != "T1" || all[0].CreatedBy != "U1" {
			t.Errorf("running team bindings = %+v", all)
		}
		b, err := tx.TeamBindingByThread("slack", "C1", "100.2")
		if err != nil || b.TeamRunID != "t-2" {
			t.Errorf("ended run's thread = %+v, %v", b, err)
		}
		if ended, err := tx.TeamBindingsOf("t-2"); err != nil || len(ended) != 1 || ended[0].Thread != "100.2" {
			t.Errorf("ended run's threads by its id = %+v, %v", ended, err)
		}
		if none, err := tx.TeamBindingsOf("t-9"); err != nil || len(none) != 0 {
			t.Errorf("threads of a run never bound = %+v, %v", none, err)
		}
		if _, err := tx.TeamBindingByThread("discord", "C1", "100.1"); !errors.Is(err, ErrNotFound) {
			t.Errorf("other platform: %v", err)
		}
		return nil
	})
}

// A question takes one answer for as long as its row is kept: a second answer is refused,
// after a reopen too and after 4,097 other questions were answered (no ring forgets it);
// the same step asked again is a new question, with an answer of its own.
func TestAQuestionTakesOneAnswerHoweverManyOthersAndAfterAReopen(t *testing.T) {
	s, path := open(t)
	a := seed(t, s)
	ctx := context.Background()
	answer := func(s *Store, channel, message string) bool {
		t.Helper()
		var ok bool
		if err := s.Tx(ctx, func(tx *Tx) (err error) { ok, err = tx.AnswerChatMessage("slack", channel, message); return err }); err != nil {
			t.Fatal(err)
		}
		return ok
	}
	ask := func(s *Store, proposal, message string) {
		t.Helper()
		if err := s.Tx(ctx, func(tx *Tx) error {
			return tx.SetChatMessage(&ChatMessage{ProposalID: proposal, Platform: "slack", Kind: "rewind", Channel: "C1", Message: message})
		}); err != nil {
			t.Fatal(err)
		}
	}
	ask(s, "p-1", "100.2")
	if !answer(s, "C1", "100.2") || answer(s, "C1", "100.2") {
		t.Fatal("a question's first answer was refused, or its second taken")
	}
	if answer(s, "C1", "100.3") || answer(s, "C2", "100.2") {
		t.Error("a message that is no question took an answer")
	}
	err := s.Tx(ctx, func(tx *Tx) error {
		for i := range 4097 {
			id := fmt.Sprintf("p-x%d", i)
			if err := tx.InsertProposal(&api.Proposal{ID: id, AgentID: a.ID, RunID: "r-1", Step: 2 + i, Command: "read_file",
				Args: json.RawMessage(`{"path":"x"}`), Hash: "h", Status: api.ProposalPending}); err != nil {
				return err
			}
			if err := tx.SetChatMessage(&ChatMessage{ProposalID: id, Platform: "slack", Kind: "rewind", Channel: "C1", Message: "200." + id}); err != nil {
				return err
			}
			if ok, err := tx.AnswerChatMessage("slack", "C1", "200."+id); err != nil || !ok {
				return fmt.Errorf("answer %d: %v, %v", i, ok, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	s2 := reopen(t, s, path)
	if answer(s2, "C1", "100.2") {
		t.Error("a question answered before 4,097 others and a reopen took a second answer")
	}
	ask(s2, "p-1", "100.9")
	if !answer(s2, "C1", "100.9") || answer(s2, "C1", "100.2") {
		t.Error("the step asked again did not take its own one answer, or the old question came back")
	}
}

// An agent's events go to its own threads (the latest on each platform); a helper's, at
// any depth, to its nearest bound parent's; an agent with neither has none.
func TestThreadsOfWalksToTheNearestBoundParent(t *testing.T) {
	s, a := seeded(t)
	mustTx(t, s, func(tx *Tx) error {
		for _, h := range []*Agent{
			{Agent: api.Agent{ID: "a-2", Name: "one/h", State: api.StateThinking, Workspace: "/tmp/ws/h", ParentID: a.ID}},
			{Agent: api.Agent{ID: "a-3", Name: "one/h/g", State: api.StateThinking, Workspace: "/tmp/ws/h/g", ParentID: "a-2"}},
			{Agent: api.Agent{ID: "a-4", Name: "loner", State: api.StateThinking, Workspace: "/tmp/ws4"}},
		} {
			if err := tx.InsertAgent(h); err != nil {
				return err
			}
		}
		for _, b := range []*Binding{
			{Platform: "slack", Channel: "C1", Thread: "1.0", AgentID: a.ID},
			{Platform: "discord", Channel: "D1", Thread: "9", AgentID: a.ID},
		} {
			if err := tx.Bind(b); err != nil {
				return err
			}
		}
		return nil
	})
	mustView(t, s, func(tx *Tx) error {
		for id, want := range map[string]int{a.ID: 2, "a-2": 2, "a-3": 2, "a-4": 0, "a-gone": 0} {
			ts, err := tx.ThreadsOf(id)
			if err != nil {
				return err
			}
			if len(ts) != want {
				t.Errorf("threads of %s = %d, want %d", id, len(ts), want)
			}
			for _, b := range ts {
				if b.AgentID != a.ID {
					t.Errorf("threads of %s: %+v is not its parent's", id, b)
				}
			}
		}
		return nil
	})
	// A helper with a thread of its own posts there, not in its parent's.
	mustTx(t, s, func(tx *Tx) error {
		return tx.Bind(&Binding{Platform: "slack", Channel: "C1", Thread: "2.0", AgentID: "a-2"})
	})
	mustView(t, s, func(tx *Tx) error {
		ts, err := tx.ThreadsOf("a-3")
		if err != nil || len(ts) != 1 || ts[0].Thread != "2.0" {
			t.Errorf("threads of a-3 under a bound helper = %+v, %v", ts, err)
		}
		return nil
	})
}
