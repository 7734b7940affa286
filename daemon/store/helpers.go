package store

import (
	"fmt"
	"time"
)

// HelperWait ties a parent's started start_agent or message_agent proposal to the helper
// run whose end is the proposal's result.
type HelperWait struct {
	ProposalID string // the parent's proposal, status started while the row exists
	AgentID    string // the parent
	HelperID   string
	HelperRun  string
	CreatedAt  time.Time
}

const waitCols = `proposal_id, agent_id, helper_id, helper_run, created_at`

func scanWait(sc scanner) (*HelperWait, error) {
	var w HelperWait
	var at int64
	err := sc.Scan(&w.ProposalID, &w.AgentID, &w.HelperID, &w.HelperRun, &at)
	if err != nil {
		return nil, rowError("reading helper wait", err)
	}
	w.CreatedAt = fromMS(at)
	return &w, nil
}

// Helpers lists the agents whose parent is parentID, oldest first.
func (t *Tx) Helpers(parentID string) ([]*Agent, error) {
	return queryAll(t, nil, "list helpers", scanAgent, `SELECT `+agentCols+` FROM agents WHERE parent_id=? AND parent_id<>'' ORDER BY created_at, id`, parentID)
}

// InsertWait records that w.ProposalID waits for the end of w.HelperRun.
func (t *Tx) InsertWait(w *HelperWait) error {
	w.CreatedAt = t.now
	return t.write("insert helper wait", `INSERT INTO helper_waits (`+waitCols+`) VALUES (?,?,?,?,?)`,
		w.ProposalID, w.AgentID, w.HelperID, w.HelperRun, ms(t.now))
}

// WaitFor returns the wait of a proposal, or ErrNotFound.
func (t *Tx) WaitFor(proposalID string) (*HelperWait, error) {
	return scanWait(t.queryRow(`SELECT `+waitCols+` FROM helper_waits WHERE proposal_id=?`, proposalID))
}

// WaitOn returns the wait on a helper run, or ErrNotFound.
func (t *Tx) WaitOn(helperRun string) (*HelperWait, error) {
	return scanWait(t.queryRow(`SELECT `+waitCols+` FROM helper_waits WHERE helper_run=? ORDER BY created_at LIMIT 1`, helperRun))
}

// Waits lists every wait, oldest first (the supervisor checks them at start).
func (t *Tx) Waits() ([]HelperWait, error) {
	return queryAll(t, nil, "list helper waits", value(scanWait), `SELECT `+waitCols+` FROM helper_waits ORDER BY created_at`)
}

// DeleteWait removes a proposal's wait; it reports whether there was one, which is how
// a helper's end is delivered once.
func (t *Tx) DeleteWait(proposalID string) (bool, error) {
	return t.affected("delete helper wait", `DELETE FROM helper_waits WHERE proposal_id=?`, proposalID)
}

// LastRunEnd is when the agent's latest ended run ended; zero when none has ended.
func (t *Tx) LastRunEnd(agentID string) (time.Time, error) {
	var at int64
	if err := t.queryRow(`SELECT COALESCE(MAX(ended_at), 0) FROM runs WHERE agent_id=?`, agentID).Scan(&at); err != nil {
		return time.Time{}, fmt.Errorf("store: last run end: %w", err)
	}
	return fromMSOrZero(at), nil
}
