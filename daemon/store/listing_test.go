package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/agentd/agentd/api"
)

// The batch lookups that list every agent agree with the per-agent ones, agent by agent.
func TestOpenProposalsAndQuestionsMatchPerAgent(t *testing.T) {
	s, _ := open(t)
	ctx := context.Background()
	statuses := []api.ProposalStatus{api.ProposalSucceeded, api.ProposalPending, api.ProposalApproved, api.ProposalFailed}
	err := s.Tx(ctx, func(tx *Tx) error {
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
	if err != nil {
		t.Fatal(err)
	}
	err = s.View(ctx, func(tx *Tx) error {
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
	if err != nil {
		t.Fatal(err)
	}
}
