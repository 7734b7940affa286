package schedule

import (
	"context"
	"errors"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/daemon/store"
)

// prune removes the finished agents of a template schedule beyond the newest m.keep,
// with their workspaces. Agents still running, paused or awaiting a decision or an
// answer are never removed, nor counted. Agents named by schedules (not templates) are
// never touched.
func (m *Manager) prune(ctx context.Context, runID, endedAgent string) {
	keep := int(m.keep.Load())
	if keep <= 0 || runID == "" {
		return
	}
	m.pruneMu.Lock()
	defer m.pruneMu.Unlock()
	var row *store.Schedule
	var ids []string
	err := m.st.View(ctx, func(tx *store.Tx) error {
		sid, err := tx.ScheduleOfRun(runID)
		if err != nil {
			return err
		}
		if row, err = tx.Schedule(sid); err != nil {
			return err
		}
		ids, err = tx.ScheduleAgents(sid)
		return err
	})
	if errors.Is(err, store.ErrNotFound) || (err == nil && row.Template == "") {
		return
	}
	if err != nil {
		m.log.Warn("schedules: finding old template agents", "run", runID, "err", err)
		return
	}
	kept := 0
	for _, id := range ids {
		a, err := m.agents.Agent(ctx, id)
		if err != nil || (id != endedAgent && !finished(a)) {
			continue
		}
		if kept < keep {
			kept++
			continue
		}
		if err := m.agents.DeleteAgent(ctx, id); err != nil && !errors.Is(err, api.ErrNotFound) {
			m.log.Warn("schedules: removing an old template agent", "schedule", row.Name, "agent", a.Name, "err", err)
			continue
		}
		m.log.Info("schedules: removed an old template agent", "schedule", row.Name, "agent", a.Name, "keep", keep)
	}
}

// finished reports (the agent whose run just ended counts as finished: its state may
// not say so yet) whether an agent's run is over and nothing waits for a person.
func finished(a *api.Agent) bool {
	return (a.State == api.StateIdle || a.State == api.StateFailed) && a.Pending == nil && a.Question == nil
}
