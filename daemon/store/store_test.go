package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/api"
)

func open(t *testing.T) (*Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "agentd.db")
	s, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, path
}

// mustTx runs fn in a write transaction and fails the test on its error.
func mustTx(t *testing.T, s *Store, fn func(tx *Tx) error) {
	t.Helper()
	if err := s.Tx(context.Background(), fn); err != nil {
		t.Fatal(err)
	}
}

// mustView runs fn in a read transaction and fails the test on its error.
func mustView(t *testing.T, s *Store, fn func(tx *Tx) error) {
	t.Helper()
	if err := s.View(context.Background(), fn); err != nil {
		t.Fatal(err)
	}
}

// reopen closes s and opens the store at path again, as a restarted daemon does.
func reopen(t *testing.T, s *Store, path string) *Store {
	t.Helper()
	s.Close()
	s2, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s2.Close() })
	return s2
}

// seeded is a store with seed's agent in it.
func seeded(t *testing.T) (*Store, *Agent) {
	t.Helper()
	s, _ := open(t)
	return s, seed(t, s)
}

func seed(t *testing.T, s *Store) *Agent {
	t.Helper()
	a := &Agent{Agent: api.Agent{ID: "a-1", Name: "one", State: api.StateThinking, Workspace: "/tmp/ws", RunID: "r-1",
		Goals: []string{"g"}, Policy: api.Policy{Mode: "ask"}}}
	mustTx(t, s, func(tx *Tx) error {
		if err := tx.InsertAgent(a); err != nil {
			return err
		}
		if err := tx.StartRun("r-1", a.ID, "task"); err != nil {
			return err
		}
		return tx.InsertProposal(&api.Proposal{ID: "p-1", AgentID: a.ID, RunID: "r-1", Step: 1, Command: "read_file",
			Args: json.RawMessage(`{"path":"x"}`), Hash: "h", Status: api.ProposalPending})
	})
	return a
}

func TestReopenKeepsEverything(t *testing.T) {
	s, path := open(t)
	seed(t, s)
	s.Close()
	s2, err := Open(context.Background(), path)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer s2.Close()
	mustView(t, s2, func(tx *Tx) error {
		a, err := tx.AgentByName("one")
		if err != nil {
			return err
		}
		if a.RunID != "r-1" || len(a.Goals) != 1 || a.Policy.Mode != "ask" {
			t.Errorf("agent after reopen = %+v", a)
		}
		p, err := tx.OpenProposal(a.ID)
		if err != nil {
			return err
		}
		if p.ID != "p-1" || string(p.Args) != `{"path":"x"}` {
			t.Errorf("open proposal = %+v", p)
		}
		return nil
	})
}

func TestFirstDecisionWins(t *testing.T) {
	s, _ := seeded(t)
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins := 0
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.Tx(context.Background(), func(tx *Tx) error {
				ok, err := tx.SetProposalStatus("p-1", api.ProposalApproved, nil, api.ProposalPending, api.ProposalInterrupted)
				if err != nil {
					return err
				}
				if ok {
					mu.Lock()
					wins++
					mu.Unlock()
					return tx.InsertDecision(&api.Decision{ProposalID: "p-1", Kind: api.DecisionApprove, Count: 1})
				}
				return nil
			})
		}()
	}
	wg.Wait()
	if wins != 1 {
		t.Fatalf("%d decisions won, want exactly 1", wins)
	}
	s.View(context.Background(), func(tx *Tx) error {
		n, _ := tx.CountDecisions("p-1")
		if n != 1 {
			t.Errorf("%d decisions stored, want 1", n)
		}
		return nil
	})
}

func TestFailedTxLeavesNothing(t *testing.T) {
	s, _ := seeded(t)
	boom := errors.New("boom")
	err := s.Tx(context.Background(), func(tx *Tx) error {
		tx.InsertEpisode("a-1", &api.Episode{RunID: "r-1", Step: 1, ProposalID: "p-1", Command: "read_file", Args: json.RawMessage(`{}`), Outcome: "succeeded"})
		tx.SetProposalStatus("p-1", api.ProposalSucceeded, nil)
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	s.View(context.Background(), func(tx *Tx) error {
		n, _ := tx.CountEpisodes("a-1")
		p, _ := tx.Proposal("p-1")
		if n != 0 || p.Status != api.ProposalPending {
			t.Errorf("after rollback: %d episodes, proposal %s", n, p.Status)
		}
		return nil
	})
}

func TestEpisodesNewestLimitOldestFirst(t *testing.T) {
	s, _ := seeded(t)
	s.Tx(context.Background(), func(tx *Tx) error {
		for i := 1; i <= 5; i++ {
			tx.InsertEpisode("a-1", &api.Episode{RunID: "r-1", Step: i, ProposalID: "p-1", Command: "c", Args: json.RawMessage(`{}`), Outcome: "succeeded"})
		}
		return nil
	})
	s.View(context.Background(), func(tx *Tx) error {
		eps, err := tx.Episodes("a-1", 3)
		if err != nil {
			t.Fatal(err)
		}
		if len(eps) != 3 || eps[0].Step != 3 || eps[2].Step != 5 {
			t.Errorf("episodes = %+v", eps)
		}
		return nil
	})
}

func TestDeleteCascades(t *testing.T) {
	s, _ := seeded(t)
	s.Tx(context.Background(), func(tx *Tx) error { return tx.DeleteAgent("a-1") })
	s.View(context.Background(), func(tx *Tx) error {
		if _, err := tx.Proposal("p-1"); !errors.Is(err, ErrNotFound) {
			t.Errorf("proposal survived its agent: %v", err)
		}
		return nil
	})
}

func TestNewerSchemaRefused(t *testing.T) {
	s, path := open(t)
	s.db.Exec("PRAGMA user_version = 99")
	s.Close()
	if _, err := Open(context.Background(), path); err == nil {
		t.Fatal("opened a database from a newer agentd")
	}
}

// Check finds damage that still lets the database open: a page of an index overwritten.
func TestCheck(t *testing.T) {
	s, path := open(t)
	seed(t, s)
	if err := s.Check(context.Background()); err != nil {
		t.Fatalf("healthy database: %v", err)
	}
	var root, pageSize int
	if err := s.db.QueryRow("SELECT rootpage FROM sqlite_schema WHERE name = 'proposals_status'").Scan(&root); err != nil {
		t.Fatal(err)
	}
	if err := s.db.QueryRow("PRAGMA page_size").Scan(&pageSize); err != nil {
		t.Fatal(err)
	}
	s.Close()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// Scribble over an index's root page: the header and schema stay readable, so the
	// database opens, and only a check finds the damage.
	off := (root - 1) * pageSize
	if root < 2 || off+pageSize > len(b) {
		t.Fatalf("index root page %d outside the %d-byte file", root, len(b))
	}
	for i := off; i < off+pageSize; i++ {
		b[i] = 0x5a
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	s2, err := Open(context.Background(), path)
	if err != nil {
		t.Fatalf("the damage was meant to leave the database openable: %v", err)
	}
	defer s2.Close()
	if err := s2.Check(context.Background()); err == nil || !strings.Contains(err.Error(), "database damaged") {
		t.Fatalf("Check on a damaged database = %v", err)
	}
}

// An agent's StateSince moves when its state changes, and only then: a thinking agent's
// counters changing mid-call do not restart the spinner of those who follow it.
func TestStateSinceMovesWithTheStateOnly(t *testing.T) {
	s, _ := open(t)
	clock := time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)
	s.now = func() time.Time { return clock }
	a := seed(t, s)
	update := func(at time.Time, mod func(*Agent)) *Agent {
		t.Helper()
		clock = at
		var got *Agent
		mustTx(t, s, func(tx *Tx) error {
			cur, err := tx.Agent(a.ID)
			if err != nil {
				return err
			}
			mod(cur)
			if err := tx.UpdateAgent(cur); err != nil {
				return err
			}
			got, err = tx.Agent(a.ID)
			return err
		})
		return got
	}
	start := clock
	if got := update(start.Add(time.Second), func(a *Agent) { a.PromptTokens += 10 }); !got.StateSince.Equal(start) {
		t.Errorf("StateSince %v after a change of counters, want %v (the state began then)", got.StateSince, start)
	}
	later := start.Add(time.Minute)
	if got := update(later, func(a *Agent) { a.State = api.StateExecuting }); !got.StateSince.Equal(later) {
		t.Errorf("StateSince %v after the state changed at %v", got.StateSince, later)
	}
}

// CountEpisodes counts an agent's episodes.
func (t *Tx) CountEpisodes(agentID string) (int, error) {
	var n int
	err := t.queryRow(`SELECT COUNT(*) FROM episodes WHERE agent_id=?`, agentID).Scan(&n)
	return n, err
}

// TestDecisionKeepsTheChatDecidersName: a chat decision's display name (by_name) is
// stored beside the id, so history and replay name the person as follow did.
func TestDecisionKeepsTheChatDecidersName(t *testing.T) {
	s, _ := seeded(t)
	mustTx(t, s, func(tx *Tx) error {
		return tx.InsertDecision(&api.Decision{ProposalID: "p-1", Kind: api.DecisionApprove, Count: 1, Source: "slack", By: "U04ABC", ByName: "Ana Lima"})
	})
	mustView(t, s, func(tx *Tx) error {
		d, err := tx.LastDecision("p-1")
		if err != nil {
			return err
		}
		if d.By != "U04ABC" || d.ByName != "Ana Lima" {
			t.Errorf("decision by %q named %q, want U04ABC named Ana Lima", d.By, d.ByName)
		}
		return nil
	})
}

// TestProposalPreviewSurvivesReopen: a proposal's preview is stored with it and read back
// whole after the store is reopened; a proposal without one reads back without one.
func TestProposalPreviewSurvivesReopen(t *testing.T) {
	s, path := open(t)
	seed(t, s) // p-1: no preview
	pv := &api.Preview{Kind: api.PreviewProgram, Programs: [][]string{{"ls", "-l"}, {"wc"}},
		Dir: "/ws", Sandbox: "bwrap", Network: "none", Note: "n\u202e"}
	mustTx(t, s, func(tx *Tx) error {
		return tx.InsertProposal(&api.Proposal{ID: "p-2", AgentID: "a-1", RunID: "r-1", Step: 2, Command: "execute_shell",
			Args: json.RawMessage(`{"command_line":"ls -l | wc"}`), Hash: "h2", Status: api.ProposalSuperseded, Preview: pv})
	})
	s2 := reopen(t, s, path)
	mustView(t, s2, func(tx *Tx) error {
		p1, err := tx.Proposal("p-1")
		if err != nil {
			return err
		}
		p2, err := tx.Proposal("p-2")
		if err != nil {
			return err
		}
		if p1.Preview != nil {
			t.Errorf("p-1 has a preview: %+v", p1.Preview)
		}
		if !reflect.DeepEqual(p2.Preview, pv) {
			t.Errorf("p-2 preview = %+v, want %+v", p2.Preview, pv)
		}
		return nil
	})
}

func TestHelpersAndWaits(t *testing.T) {
	s, _ := seeded(t)
	mustTx(t, s, func(tx *Tx) error {
		h := &Agent{Agent: api.Agent{ID: "a-2", Name: "one/helper", State: api.StateThinking, Workspace: "/tmp/ws/agents/helper",
			RunID: "r-2", ParentID: "a-1", Policy: api.Policy{Mode: "ask"}}}
		if err := tx.InsertAgent(h); err != nil {
			return err
		}
		return tx.InsertWait(&HelperWait{ProposalID: "p-1", AgentID: "a-1", HelperID: "a-2", HelperRun: "r-2"})
	})
	mustTx(t, s, func(tx *Tx) error {
		hs, err := tx.Helpers("a-1")
		if err != nil {
			return err
		}
		if len(hs) != 1 || hs[0].ParentID != "a-1" || hs[0].Name != "one/helper" {
			t.Fatalf("helpers of a-1 = %+v", hs)
		}
		if top, err := tx.Helpers(""); err != nil || len(top) != 0 {
			t.Fatalf("helpers of \"\" = %v, %v; want none: top-level agents are no one's helpers", top, err)
		}
		w, err := tx.WaitOn("r-2")
		if err != nil || w.ProposalID != "p-1" || w.HelperID != "a-2" {
			t.Fatalf("WaitOn = %+v, %v", w, err)
		}
		if w, err := tx.WaitFor("p-1"); err != nil || w.HelperRun != "r-2" {
			t.Fatalf("WaitFor = %+v, %v", w, err)
		}
		if ok, err := tx.DeleteWait("p-1"); !ok || err != nil {
			t.Fatalf("first DeleteWait = %v, %v", ok, err)
		}
		if ok, err := tx.DeleteWait("p-1"); ok || err != nil {
			t.Fatalf("second DeleteWait = %v, %v; want false: a helper's end is delivered once", ok, err)
		}
		if _, err := tx.WaitOn("r-2"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("WaitOn after delete: %v", err)
		}
		return nil
	})
}

func TestWaitGoesWithItsParent(t *testing.T) {
	s, _ := seeded(t)
	ctx := context.Background()
	mustTx(t, s, func(tx *Tx) error {
		if err := tx.InsertWait(&HelperWait{ProposalID: "p-1", AgentID: "a-1", HelperID: "a-9", HelperRun: "r-9"}); err != nil {
			return err
		}
		return tx.DeleteAgent("a-1")
	})
	s.View(ctx, func(tx *Tx) error {
		if ws, err := tx.Waits(); err != nil || len(ws) != 0 {
			t.Fatalf("waits after the parent's removal = %v, %v", ws, err)
		}
		return nil
	})
}

// The batch lookups that list every agent agree with the per-agent ones, agent by agent.
func TestOpenProposalsAndQuestionsMatchPerAgent(t *testing.T) {
	s, _ := open(t)
	statuses := []api.ProposalStatus{api.ProposalSucceeded, api.ProposalPending, api.ProposalApproved, api.ProposalFailed}
	mustTx(t, s, func(tx *Tx) error {
		for i := range 5 {
			a := &Agent{Agent: api.Agent{ID: fmt.Sprintf("a-%d", i), Name: fmt.Sprintf("n%d", i), State: api.StateThinking,
				Workspace: "/tmp/ws", RunID: fmt.Sprintf("r-%d", i), Policy: api.Policy{Mode: "ask"}}}
			if err := tx.InsertAgent(a); err != nil {
				return err
			}
			if err := tx.StartRun(a.RunID, a.ID, "task"); err != nil {
				return err
			}
			for j := range i { // agent i has i proposals; its statuses cycle
				p := &api.Proposal{ID: fmt.Sprintf("p-%d-%d", i, j), AgentID: a.ID, RunID: a.RunID, Step: j + 1,
					Command: "read_file", Args: json.RawMessage(`{"path":"x"}`), Hash: "h", Status: statuses[(i+j)%len(statuses)]}
				if err := tx.InsertProposal(p); err != nil {
					return err
				}
				if j == 1 {
					if err := tx.SetQuestion(a.ID, &api.Question{ProposalID: p.ID, Text: "which? " + p.ID}); err != nil {
						return err
					}
				}
			}
		}
		return nil
	})
	mustView(t, s, func(tx *Tx) error {
		open, err := tx.OpenProposals(AgentRange{}, false)
		if err != nil {
			return err
		}
		qs, err := tx.Questions(AgentRange{})
		if err != nil {
			return err
		}
		var opens, asked int
		for i := range 5 {
			id := fmt.Sprintf("a-%d", i)
			want, err := tx.OpenProposal(id)
			if errors.Is(err, ErrNotFound) {
				want = nil
			} else if err != nil {
				return err
			}
			if !reflect.DeepEqual(open[id], want) {
				t.Errorf("agent %s: OpenProposals gives %+v, OpenProposal %+v", id, open[id], want)
			}
			wq, err := tx.Question(id)
			if errors.Is(err, ErrNotFound) {
				wq = nil
			} else if err != nil {
				return err
			}
			if !reflect.DeepEqual(qs[id], wq) {
				t.Errorf("agent %s: Questions gives %+v, Question %+v", id, qs[id], wq)
			}
			if want != nil {
				opens++
			}
			if wq != nil {
				asked++
			}
		}
		if opens == 0 || asked == 0 || len(open) != opens || len(qs) != asked {
			t.Errorf("%d open proposals, %d questions (maps %d, %d): want some of each and no extra agents", opens, asked, len(open), len(qs))
		}
		return nil
	})
}
