package store

import (
	"fmt"

	"github.com/agentd/agentd/daemon/client"
)

// OpenProposals returns each agent's open proposal, the one OpenProposal would return,
// keyed by agent id: listing every agent takes one query, not one per agent.
func (t *Tx) OpenProposals() (map[string]*client.Proposal, error) {
	ps, err := t.proposals(`status IN ('pending','interrupted','approved','started')`)
	if err != nil {
		return nil, err
	}
	out := make(map[string]*client.Proposal, len(ps))
	for i := range ps { // oldest first, so each agent's newest wins
		out[ps[i].AgentID] = &ps[i]
	}
	return out, nil
}

// Questions returns each agent's open question, the one Question would return, keyed by
// agent id.
func (t *Tx) Questions() (map[string]*client.Question, error) {
	rows, err := t.query(`SELECT agent_id, proposal_id, text, asked_at FROM questions ORDER BY asked_at, rowid`)
	if err != nil {
		return nil, fmt.Errorf("store: reading questions: %w", err)
	}
	defer rows.Close()
	out := map[string]*client.Question{}
	for rows.Next() {
		var agent string
		var q client.Question
		var at int64
		if err := rows.Scan(&agent, &q.ProposalID, &q.Text, &at); err != nil {
			return nil, fmt.Errorf("store: reading question: %w", err)
		}
		q.AskedAt = fromMS(at)
		out[agent] = &q // oldest first, so the newest wins
	}
	return out, rows.Err()
}
