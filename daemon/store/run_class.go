package store

import "fmt"

// RunLink ties a helper's run to the run of the parent that waits for it (through the
// parent's start_agent or message_agent proposal).
type RunLink struct {
	HelperRun, ParentID, ParentRun string
}

// DaemonStartedRuns lists the open runs the daemon started itself, as their records say:
// a schedule's firing (schedule_runs.run_id) or a running team run's turn (its
// wait_run). Their model calls queue as batch work, after a restart too.
func (t *Tx) DaemonStartedRuns() ([]string, error) {
	return queryAll(t, nil, "list daemon-started runs", scanString, `SELECT id FROM runs WHERE ended_at IS NULL AND (
		id IN (SELECT run_id FROM schedule_runs WHERE run_id <> '')
		OR id IN (SELECT wait_run FROM team_runs WHERE status = 'running' AND wait_run <> ''))`)
}

// HelperRunLinks lists the open helper runs a parent's proposal waits for, each with the
// parent's run (the run of that proposal).
func (t *Tx) HelperRunLinks() ([]RunLink, error) {
	return queryAll(t, nil, "list helper runs", func(sc scanner) (RunLink, error) {
		var l RunLink
		if err := sc.Scan(&l.HelperRun, &l.ParentID, &l.ParentRun); err != nil {
			return l, fmt.Errorf("store: list helper runs: %w", err)
		}
		return l, nil
	}, `SELECT w.helper_run, w.agent_id, p.run_id FROM helper_waits w
		JOIN proposals p ON p.id = w.proposal_id
		JOIN runs r ON r.id = w.helper_run
		WHERE r.ended_at IS NULL`)
}
