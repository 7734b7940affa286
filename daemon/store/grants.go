package store

import (
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/agentd/agentd/api"
)

const grantCols = `id, agent_id, kind, made_by, source, label, command, hash, pattern, count, used,
	expires_at, run_id, created_at, revoked_at, revoked_by, files`

func scanGrant(sc scanner) (*api.Grant, error) {
	var g api.Grant
	var created int64
	var expires, revoked sql.NullInt64
	var files string
	err := sc.Scan(&g.ID, &g.AgentID, &g.Kind, &g.By, &g.Source, &g.Label, &g.Command, &g.Hash, &g.Pattern,
		&g.Count, &g.Used, &expires, &g.RunID, &created, &revoked, &g.RevokedBy, &files)
	if err != nil {
		return nil, err
	}
	if files != "" {
		if err := json.Unmarshal([]byte(files), &g.Files); err != nil {
			// Unreadable, it binds a file no line names: the grant then asks rather than approves.
			g.Files = []api.BoundFile{{Path: "(unreadable binding)", SHA256: "-"}}
		}
	}
	g.CreatedAt = fromMS(created)
	if expires.Valid {
		t := fromMS(expires.Int64)
		g.ExpiresAt = &t
	}
	if revoked.Valid {
		t := fromMS(revoked.Int64)
		g.RevokedAt = &t
	}
	return &g, nil
}

// InsertGrant stores a new grant; its CreatedAt is the transaction's time.
func (t *Tx) InsertGrant(g *api.Grant) error {
	g.CreatedAt = t.now
	var expires any
	if g.ExpiresAt != nil {
		expires = ms(*g.ExpiresAt)
	}
	return t.write("insert grant", `INSERT INTO grants (id, agent_id, kind, made_by, source, label, command, hash, pattern, count, used,
		expires_at, run_id, created_at, files) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`,
		g.ID, g.AgentID, g.Kind, g.By, g.Source, g.Label, g.Command, g.Hash, g.Pattern, g.Count, g.Used,
		expires, g.RunID, ms(t.now), jsOr(len(g.Files) == 0, g.Files))
}

// Grants lists the agent's grants, newest first: active and ended ones alike.
func (t *Tx) Grants(agentID string) ([]api.Grant, error) {
	return t.grants(`SELECT `+grantCols+` FROM grants WHERE agent_id=? ORDER BY created_at DESC, rowid DESC`, agentID)
}

// LiveGrants lists the agent's grants that may still approve on run runID (the run of
// the agent, or of its top agent for a helper), newest first: not revoked, used up,
// expired by the transaction's time, or bound to another run. Those that ended stay
// in the table (Grants lists them) but cost the cycle nothing.
func (t *Tx) LiveGrants(agentID, runID string) ([]api.Grant, error) {
	return t.grants(`SELECT `+grantCols+` FROM grants WHERE agent_id=? AND revoked_at IS NULL
		AND (count = 0 OR used < count) AND (expires_at IS NULL OR expires_at > ?) AND run_id IN ('', ?)
		ORDER BY created_at DESC, rowid DESC`, agentID, ms(t.now), runID)
}

func (t *Tx) grants(q string, args ...any) ([]api.Grant, error) {
	return queryAll(t, []api.Grant{}, "grants", value(scanGrant), q, args...)
}

// Grant returns one of the agent's grants, or ErrNotFound.
func (t *Tx) Grant(agentID, id string) (*api.Grant, error) {
	g, err := scanGrant(t.queryRow(`SELECT `+grantCols+` FROM grants WHERE agent_id=? AND id=?`, agentID, id))
	if err != nil {
		return nil, rowError("grant", err)
	}
	return g, nil
}

// UseGrant counts one approval made by the grant.
func (t *Tx) UseGrant(id string) error {
	return t.write("use grant", `UPDATE grants SET used = used + 1 WHERE id=?`, id)
}

// RevokeGrant revokes the grant now; it reports false when it was revoked already.
func (t *Tx) RevokeGrant(id, by string) (bool, error) {
	return t.affected("revoke grant", `UPDATE grants SET revoked_at=?, revoked_by=? WHERE id=? AND revoked_at IS NULL`, ms(t.now), by, id)
}

// LatestProposals lists the agent's n latest proposals, newest first (a grant's preview).
func (t *Tx) LatestProposals(agentID string, n int) ([]api.Proposal, error) {
	return queryAll(t, []api.Proposal{}, "latest proposals", value(scanProposal), `SELECT `+proposalCols+` FROM proposals WHERE agent_id=? ORDER BY created_at DESC, rowid DESC LIMIT ?`, agentID, n)
}

// LastDecisions maps each of the agent's decided proposals to its latest decision (an
// agent's history shows who or which grant let each step run).
func (t *Tx) LastDecisions(agentID string) (map[string]*api.Decision, error) {
	out := map[string]*api.Decision{}
	err := eachRow(t, "decisions", func(sc scanner) error {
		d, err := scanDecision(sc)
		if err != nil {
			return fmt.Errorf("store: decisions: %w", err)
		}
		out[d.ProposalID] = d // later rows win: the latest decision
		return nil
	}, `SELECT `+decisionCols+`
		FROM decisions d JOIN proposals p ON p.id = d.proposal_id WHERE p.agent_id = ? ORDER BY d.id`, agentID)
	return out, err
}
