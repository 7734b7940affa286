package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
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

func TestGrantsSurviveRestart(t *testing.T) {
	s, path := open(t)
	a := seed(t, s)
	exp := time.Now().Add(24 * time.Hour).Truncate(time.Millisecond).UTC()
	past := time.Now().Add(-time.Minute)
	mustTx(t, s, func(tx *Tx) error {
		for _, g := range []*api.Grant{
			{ID: "g-count", AgentID: a.ID, Kind: api.GrantCount, By: "root", Source: "agentctl", Label: "y -3", Count: 2, RunID: "r-1"},
			{ID: "g-exact", AgentID: a.ID, Kind: api.GrantExact, By: "ana", Source: "slack", Label: "y!", Command: "write_file", Hash: "abc"},
			{ID: "g-pat", AgentID: a.ID, Kind: api.GrantPattern, By: "root", Source: "agentctl", Label: "policy add", Pattern: "write_file(notes/*)", ExpiresAt: &exp},
			{ID: "g-old", AgentID: a.ID, Kind: api.GrantPattern, By: "root", Source: "agentctl", Label: "policy add", Pattern: "read_file(*)", ExpiresAt: &past},
			{ID: "g-run0", AgentID: a.ID, Kind: api.GrantCount, By: "root", Source: "agentctl", Label: "y -5", Count: 4, RunID: "r-0"},
		} {
			if err := tx.InsertGrant(g); err != nil {
				return err
			}
		}
		if err := tx.UseGrant("g-count"); err != nil {
			return err
		}
		if ok, err := tx.RevokeGrant("g-exact", "root"); err != nil || !ok {
			t.Errorf("revoke: %v %v", ok, err)
		}
		if ok, _ := tx.RevokeGrant("g-exact", "root"); ok {
			t.Error("revoked twice")
		}
		return tx.InsertDecision(&api.Decision{ProposalID: "p-1", Kind: api.DecisionApprove, Count: 1, Source: "grant",
			By: "root", Grant: "g-count", GrantLabel: "root's y -3 (1 left)"})
	})
	s2 := reopen(t, s, path)
	mustView(t, s2, func(tx *Tx) error {
		all, err := tx.Grants(a.ID)
		if err != nil {
			return err
		}
		if len(all) != 5 {
			t.Fatalf("grants after restart: %+v", all)
		}
		live, err := tx.LiveGrants(a.ID, "r-1")
		if err != nil {
			return err
		}
		if len(live) != 2 || live[0].ID == "g-exact" || live[1].ID == "g-exact" {
			t.Errorf("live grants: %+v, want the count and the pattern grant: not the revoked, expired or other run's", live)
		}
		g, err := tx.Grant(a.ID, "g-count")
		if err != nil {
			return err
		}
		if g.Used != 1 || g.Left() != 1 || g.Label != "y -3" || g.RunID != "r-1" {
			t.Errorf("count grant: %+v", g)
		}
		if g, _ := tx.Grant(a.ID, "g-pat"); g.ExpiresAt == nil || !g.ExpiresAt.Equal(exp) {
			t.Errorf("pattern grant's expiry: %+v", g)
		}
		if g, _ := tx.Grant(a.ID, "g-exact"); g.RevokedAt == nil || g.RevokedBy != "root" {
			t.Errorf("revoked grant: %+v", g)
		}
		if _, err := tx.Grant(a.ID, "g-none"); !errors.Is(err, ErrNotFound) {
			t.Errorf("unknown grant: %v", err)
		}
		d, err := tx.LastDecision("p-1")
		if err != nil {
			return err
		}
		if d.Grant != "g-count" || d.GrantLabel != "root's y -3 (1 left)" {
			t.Errorf("decision's grant: %+v", d)
		}
		return nil
	})
}

// An agent left in auto mode by an older agentd keeps its steps as a count grant.
func TestMigrationTurnsAutoStepsIntoGrant(t *testing.T) {
	ctx := context.Background()
	path, _ := migratedUpTo(t, "CREATE TABLE grants", `INSERT INTO agents (id, name, state, policy, run_id, workspace, created_at, updated_at)
		VALUES ('a-1', 'one', 'thinking', '{"mode":"auto","auto_steps":4}', 'r-1', '/tmp/ws', 1, 1),
		       ('a-2', 'two', 'thinking', '{"mode":"ask"}', 'r-2', '/tmp/ws2', 1, 1)`)
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.View(ctx, func(tx *Tx) error {
		gs, err := tx.LiveGrants("a-1", "r-1")
		if err != nil || len(gs) != 1 || gs[0].Kind != api.GrantCount || gs[0].Count != 4 || gs[0].RunID != "r-1" {
			t.Errorf("a-1's grants: %+v, %v; want one count grant of 4 for run r-1", gs, err)
		}
		if gs, _ := tx.LiveGrants("a-2", "r-2"); len(gs) != 0 {
			t.Errorf("a-2 had no auto steps, got grants %+v", gs)
		}
		return nil
	})
}

// An exact grant keeps the files it bound across a restart; one stored before grants
// bound files reads back binding none.
func TestGrantFilesSurviveRestart(t *testing.T) {
	ctx := context.Background()
	path, _ := migratedUpTo(t, "grants ADD COLUMN files", `INSERT INTO agents (id, name, state, policy, run_id, workspace, created_at, updated_at)
		VALUES ('a-1', 'one', 'idle', '{"mode":"ask"}', 'r-1', '/tmp/ws', 1, 1);
		INSERT INTO grants (id, agent_id, kind, label, command, hash, created_at) VALUES ('g-old', 'a-1', 'exact', 'y!', 'execute_shell', 'h0', 1)`)
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	files := []api.BoundFile{{Path: "build.sh", SHA256: "b1"}, {Path: "check.py", SHA256: "c1"}}
	if err := s.Tx(ctx, func(tx *Tx) error {
		return tx.InsertGrant(&api.Grant{ID: "g-new", AgentID: "a-1", Kind: api.GrantExact, Label: "y!", Command: "execute_shell", Hash: "h1", Files: files})
	}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if s, err = Open(ctx, path); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.View(ctx, func(tx *Tx) error {
		if g, err := tx.Grant("a-1", "g-new"); err != nil || !slices.Equal(g.Files, files) {
			t.Errorf("g-new: %+v, %v; want the files it bound", g, err)
		}
		if g, err := tx.Grant("a-1", "g-old"); err != nil || g.Files != nil {
			t.Errorf("g-old: %+v, %v; want no files", g, err)
		}
		return nil
	})
}

// migratedUpTo makes a database as an older agentd left it: the migrations before the
// first one containing marker, then seed. It returns the file and that migration's index.
func migratedUpTo(t *testing.T, marker, seed string) (path string, last int) {
	t.Helper()
	ctx := context.Background()
	path = filepath.Join(t.TempDir(), "agentd.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	last = slices.IndexFunc(migrations, func(m string) bool { return strings.Contains(m, marker) })
	if last < 0 {
		t.Fatalf("no migration contains %q", marker)
	}
	for i, m := range migrations[:last] {
		if _, err := db.ExecContext(ctx, m); err != nil {
			t.Fatalf("migration %d: %v", i+1, err)
		}
	}
	if _, err := db.ExecContext(ctx, `PRAGMA user_version = `+strconv.Itoa(last)); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, seed); err != nil {
		t.Fatal(err)
	}
	return path, last
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

// A proposal's message keeps the Ref it shows and is closed once: the first close wins,
// the agent's open messages (with their proposals) no longer list it, and posting the
// proposal again (asked again) opens it again. Across a reopen, as across a relay restart.
func TestChatMessageClosesOnceAndOpensWhenPostedAgain(t *testing.T) {
	s, path := open(t)
	a := seed(t, s)
	mustTx(t, s, func(tx *Tx) error {
		if err := tx.SetChatMessage(&ChatMessage{ProposalID: "p-1", Platform: "slack", Kind: "proposal", Channel: "C1", Message: "100.2", Ref: "ref-shown"}); err != nil {
			return err
		}
		return tx.SetChatMessage(&ChatMessage{ProposalID: "p-1", Platform: "slack", Kind: "question", Channel: "C1", Message: "100.3"})
	})
	s = reopen(t, s, path)
	closeIt := func() (first bool) {
		mustTx(t, s, func(tx *Tx) (err error) { first, err = tx.CloseChatMessage("p-1", "slack"); return err })
		return first
	}
	openOnes := func() (open []*ChatMessage) {
		mustView(t, s, func(tx *Tx) (err error) { open, err = tx.OpenChatMessages(a.ID); return err })
		return open
	}
	open := openOnes()
	if len(open) != 1 || open[0].Kind != "proposal" || open[0].Ref != "ref-shown" || open[0].Closed || open[0].Proposal == nil || open[0].Proposal.Command != "read_file" {
		t.Fatalf("open messages = %+v, want the proposal's, with its Ref and proposal", open)
	}
	if !closeIt() || closeIt() {
		t.Fatal("closing twice: want the first close to report true and the second false")
	}
	if open := openOnes(); len(open) != 0 {
		t.Errorf("open after closing = %+v", open)
	}
	mustView(t, s, func(tx *Tx) error {
		m, err := tx.ChatMessage("p-1", "slack", "proposal")
		if err == nil && (!m.Closed || m.Ref != "ref-shown") {
			t.Errorf("closed message read back = %+v", m)
		}
		return err
	})
	mustTx(t, s, func(tx *Tx) error {
		return tx.SetChatMessage(&ChatMessage{ProposalID: "p-1", Platform: "slack", Kind: "proposal", Channel: "C1", Message: "100.2", Ref: "ref-again"})
	})
	if open := openOnes(); len(open) != 1 || open[0].Ref != "ref-again" {
		t.Errorf("open after posting again = %+v, want it open with the new Ref", open)
	}
	mustTx(t, s, func(tx *Tx) error {
		return tx.SetChatMessage(&ChatMessage{ProposalID: "p-1", Platform: "discord", Kind: "proposal", Channel: "C9", Message: "9", Closed: true})
	})
	if open := openOnes(); len(open) != 1 || open[0].Platform != "slack" {
		t.Errorf("a message recorded closed is listed open: %+v", open)
	}
}

// An open message lists its proposal's decision once it is decided (the relay had not
// shown it yet), and none while it waits or once its run moved on without one.
func TestOpenChatMessagesCarryTheDecisionNotYetShown(t *testing.T) {
	s, _ := open(t)
	a := seed(t, s)
	decisionOf := func() *api.Decision {
		var open []*ChatMessage
		mustView(t, s, func(tx *Tx) (err error) { open, err = tx.OpenChatMessages(a.ID); return err })
		if len(open) != 1 {
			t.Fatalf("open messages = %+v, want p-1's", open)
		}
		return open[0].Decision
	}
	mustTx(t, s, func(tx *Tx) error {
		return tx.SetChatMessage(&ChatMessage{ProposalID: "p-1", Platform: "slack", Kind: "proposal", Channel: "C1", Message: "100.2"})
	})
	if d := decisionOf(); d != nil {
		t.Fatalf("a waiting proposal's message carries a decision: %+v", d)
	}
	mustTx(t, s, func(tx *Tx) error {
		if err := tx.InsertDecision(&api.Decision{ProposalID: "p-1", Kind: api.DecisionApprove, By: "U1", Source: "slack"}); err != nil {
			return err
		}
		_, err := tx.SetProposalStatus("p-1", api.ProposalApproved, nil, api.ProposalPending)
		return err
	})
	if d := decisionOf(); d == nil || d.Kind != api.DecisionApprove || d.By != "U1" {
		t.Fatalf("a decided proposal's open message carries decision %+v, want U1's approval", d)
	}
	mustTx(t, s, func(tx *Tx) error {
		_, err := tx.SetProposalStatus("p-1", api.ProposalSuperseded, nil)
		return err
	})
	if d := decisionOf(); d != nil {
		t.Errorf("a superseded proposal's message carries a decision: %+v", d)
	}
}
