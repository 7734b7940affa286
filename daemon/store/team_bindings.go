package store

import "github.com/agentd/agentd/api"

// TeamBinding is a team run's chat thread (api.TeamBinding).
type TeamBinding = api.TeamBinding

const teamBindingCols = `team_run_id, platform, team, channel, thread, seq, created_by`

func scanTeamBinding(sc scanner) (*TeamBinding, error) {
	var b TeamBinding
	err := sc.Scan(&b.TeamRunID, &b.Platform, &b.Team, &b.Channel, &b.Thread, &b.Seq, &b.CreatedBy)
	if err != nil {
		return nil, rowError("reading team binding", err)
	}
	return &b, nil
}

// BindTeam stores (or replaces) a team run's thread on a platform.
func (t *Tx) BindTeam(b *TeamBinding) error {
	return t.write("team binding", `INSERT OR REPLACE INTO team_bindings (`+teamBindingCols+`, created_at) VALUES (?,?,?,?,?,?,?,?)`,
		b.TeamRunID, b.Platform, b.Team, b.Channel, b.Thread, b.Seq, b.CreatedBy, ms(t.now))
}

// SetTeamSeq records that the thread of a team run on platform shows its transcript up
// to seq. It never goes back.
func (t *Tx) SetTeamSeq(teamRunID, platform string, seq int) error {
	return t.write("team binding seq", `UPDATE team_bindings SET seq = ? WHERE team_run_id = ? AND platform = ? AND seq < ?`, seq, teamRunID, platform, seq)
}

// TeamBindingByThread returns the team binding of a thread, or ErrNotFound.
func (t *Tx) TeamBindingByThread(platform, channel, thread string) (*TeamBinding, error) {
	return scanTeamBinding(t.queryRow(`SELECT `+teamBindingCols+` FROM team_bindings WHERE platform = ? AND channel = ? AND thread = ?`,
		platform, channel, thread))
}

// TeamBindings returns the bindings of the team runs still running, oldest first.
func (t *Tx) TeamBindings() ([]*TeamBinding, error) {
	return queryAll(t, nil, "team bindings", scanTeamBinding, `SELECT `+teamBindingCols+` FROM team_bindings
		WHERE team_run_id IN (SELECT id FROM team_runs WHERE status = 'running') ORDER BY created_at, team_run_id, platform`)
}

// TeamBindingsOf returns a team run's threads, one per platform, running or ended: a
// role agent's last events still go there after its run ended.
func (t *Tx) TeamBindingsOf(teamRunID string) ([]*TeamBinding, error) {
	return queryAll(t, nil, "team bindings", scanTeamBinding, `SELECT `+teamBindingCols+` FROM team_bindings
		WHERE team_run_id = ? ORDER BY platform`, teamRunID)
}
