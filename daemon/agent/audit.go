package agent

import (
	"context"
	"errors"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/daemon/store"
)

// auditLog serves the audit log and the replay of a run, read from the store.
type auditLog struct{ st *store.Store }

// maxAuditEntries bounds one audit listing.
const maxAuditEntries = 10_000

// Audit lists audit entries, oldest first: of one agent (by name or id; a removed agent
// by its id) or of all, since a time, the newest limit of them.
func (s *auditLog) Audit(ctx context.Context, q api.AuditQuery) ([]api.AuditEntry, error) {
	if q.Limit < 0 || q.Limit > maxAuditEntries {
		return nil, badRequest("limit %d: want 1 to %d (0 for 100); page back with before=ID of the oldest entry shown", q.Limit, maxAuditEntries)
	}
	var out []api.AuditEntry
	err := s.st.View(ctx, func(tx *store.Tx) error {
		f := store.AuditFilter{Kind: q.Kind, Since: q.Since, Limit: q.Limit, Before: q.Before}
		var unknown error
		if q.Agent != "" {
			a, err := resolve(tx, q.Agent)
			switch {
			case err == nil:
				f.AgentID = a.ID
			case errors.Is(err, api.ErrNotFound):
				f.AgentID, unknown = q.Agent, err // a removed agent's entries stay, under its id
			default:
				return err
			}
		}
		var err error
		out, err = tx.AuditEntries(f)
		if err == nil && len(out) == 0 && unknown != nil {
			return unknown // no agent, and none that was: a typo, said as every command says it
		}
		return err
	})
	return out, err
}

// Replay returns a run step by step. ref is a run id, or an agent (name or id), which
// means its latest run.
func (s *auditLog) Replay(ctx context.Context, ref string) (*api.Replay, error) {
	var out *api.Replay
	err := s.st.View(ctx, func(tx *store.Tx) error {
		r, err := tx.Replay(ref)
		if err == nil {
			out = r
			return nil
		}
		if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		a, err := resolve(tx, ref)
		if errors.Is(err, api.ErrNotFound) {
			return notFound("no run or agent %q (run ids are in agentctl history and agentctl show)", ref)
		}
		if err != nil {
			return err
		}
		runs, err := tx.Runs(a.ID, 1)
		if err != nil {
			return err
		}
		if len(runs) == 0 {
			return notFound("agent %s has not started a run yet", a.Name)
		}
		out, err = tx.Replay(runs[0].ID)
		return err
	})
	return out, err
}
