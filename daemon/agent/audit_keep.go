package agent

import (
	"log/slog"
	"sync/atomic"

	"github.com/agentd/agentd/daemon/store"
)

// How an audit write that fails is handled. An audit line is written in the same store
// transaction as the change it records, so the rule is: return the error and the whole
// transaction rolls back (the caller — the API, the agent's loop — reports it). The only
// exceptions are records of what already happened outside the store: a command's outcome
// after it ran, a helper's result, crash recovery. Failing those transactions would lose
// the outcome or keep every agent from starting, so auditKeeper logs and counts instead.

// auditKeeper writes the audit lines that must not fail their transaction; it is safe
// for concurrent use.
type auditKeeper struct {
	log     *slog.Logger
	dropped atomic.Int64 // audit lines that could not be written
}

// keep appends one audit line; a failure is logged with the running count, never dropped
// silently, and leaves tx to commit the change it records.
func (k *auditKeeper) keep(tx *store.Tx, agentID, kind string, detail any) {
	if err := tx.Audit(agentID, kind, detail); err != nil {
		n := k.dropped.Add(1)
		k.log.Error("audit line not written; the change it records is kept", "agent", agentID, "kind", kind, "err", err, "audit_failures", n)
	}
}
