package store

import (
	"fmt"

	"github.com/agentd/agentd/api"
)

// AgentRange is a run of agents in the order they were stored (their rowid, which
// SQLite gives in increasing order): those after position After, up to and including
// Through. The zero value is every agent. A position stays valid after its agent is
// removed, so a listing goes on from it.
type AgentRange struct {
	After, Through int64
}

// cond is the SQL condition and arguments that keep the rows of r's agents (agent_id).
func (r AgentRange) cond() (string, []any) {
	if r == (AgentRange{}) {
		return "1", nil
	}
	return "agent_id IN (SELECT id FROM agents WHERE rowid > ? AND rowid <= ?)", []any{r.After, r.Through}
}

// AgentsPage lists at most limit agents (a negative limit: all) stored after position
// after (0: from the first), oldest first, with their positions.
func (t *Tx) AgentsPage(after int64, limit int) ([]*Agent, []int64, error) {
	var out []*Agent
	var pos []int64
	err := eachRow(t, "list agents", func(sc scanner) error {
		var at int64
		a, err := scanAgent(positioned{sc, &at})
		out, pos = append(out, a), append(pos, at)
		return err
	}, `SELECT rowid, `+agentCols+` FROM agents WHERE rowid > ? ORDER BY rowid LIMIT ?`, after, limit)
	if err != nil {
		return nil, nil, err
	}
	return out, pos, nil
}

// positioned scans a row's rowid into pos, then the rest as its scanner would.
type positioned struct {
	row scanner
	pos *int64
}

func (p positioned) Scan(dest ...any) error { return p.row.Scan(append([]any{p.pos}, dest...)...) }

// OpenProposals returns each agent's open proposal, the one OpenProposal would return,
// keyed by agent id, of the agents in r: listing agents takes one query, not one per
// agent. Brief ones are read without their thoughts, args, result and preview.
func (t *Tx) OpenProposals(r AgentRange, brief bool) (map[string]*api.Proposal, error) {
	of, args := r.cond()
	cols := proposalCols
	if brief {
		cols = briefProposalCols
	}
	// By the open-proposal index, agent by agent: the status index would walk every
	// open proposal for each page of a listing.
	ps, err := t.proposalsBy(cols, "INDEXED BY proposals_open", `status IN ('pending','interrupted','approved','started') AND `+of, args...)
	if err != nil {
		return nil, err
	}
	out := make(map[string]*api.Proposal, len(ps))
	for i := range ps { // oldest first, so each agent's newest wins
		out[ps[i].AgentID] = &ps[i]
	}
	return out, nil
}

// Questions returns each agent's open question, the one Question would return, keyed by
// agent id, of the agents in r.
func (t *Tx) Questions(r AgentRange) (map[string]*api.Question, error) {
	of, args := r.cond()
	out := map[string]*api.Question{}
	err := eachRow(t, "reading questions", func(sc scanner) error {
		var agent string
		var q api.Question
		var at int64
		if err := sc.Scan(&agent, &q.ProposalID, &q.Text, &at); err != nil {
			return fmt.Errorf("store: reading question: %w", err)
		}
		q.AskedAt = fromMS(at)
		out[agent] = &q // oldest first, so the newest wins
		return nil
	}, `SELECT agent_id, proposal_id, text, asked_at FROM questions WHERE `+of+` ORDER BY asked_at, rowid`, args...)
	return out, err
}
