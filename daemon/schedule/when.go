package schedule

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/commands/shell"
	"github.com/agentd/agentd/daemon/schedule/cron"
	"github.com/agentd/agentd/daemon/schedule/wake"
	"github.com/agentd/agentd/daemon/store"
)

// Wake is what the Manager needs to check schedules' wake conditions at each firing,
// before any model call (daemon/schedule/wake).
type Wake struct {
	// Engine checks the conditions; nil refuses schedules with conditions.
	Engine *wake.Engine
	// Shell runs check commands: the agents' execute_shell (nil when [shell] is off).
	Shell shell.Checker
	// ReadOnly are the read-only paths the agents' shell sees; an absolute
	// --when-changed path must lie under one of them.
	ReadOnly []string
	// Hidden are the host paths the agents' sandbox hides (agentd's config, tokens): a
	// watched absolute path may neither be nor hold one.
	Hidden []string
}

// Close releases what the wake checks hold open; call it after Stop.
func (m *Manager) Close() error {
	if m.wake.Engine == nil {
		return nil
	}
	return m.wake.Engine.Close()
}

// checkWhen checks a schedule's wake conditions, their form and then against its target
// as it stands (paths exist and stay inside, URLs pass the network guard); nil or empty
// conditions are none.
func (m *Manager) checkWhen(ctx context.Context, when *api.WakeConditions, row *store.Schedule) (*api.WakeConditions, error) {
	if when == nil {
		return nil, nil
	}
	c, err := wake.Conditions(*when).Check()
	if err != nil {
		return nil, badRequest("when: %v", err)
	}
	if c.Empty() {
		return nil, nil
	}
	if m.wake.Engine == nil {
		return nil, badRequest("when: this agentd checks no wake conditions: leave them out")
	}
	t, err := m.target(ctx, row)
	if err != nil {
		return nil, badRequest("when: %v", err)
	}
	if err := m.wake.Engine.Validate(c, t); err != nil {
		return nil, badRequest("when: %v", err)
	}
	out := api.WakeConditions(c)
	return &out, nil
}

// target is what a schedule's checks run against: its agent's workspace and shell, or
// (a template schedule) no workspace.
func (m *Manager) target(ctx context.Context, row *store.Schedule) (wake.Target, error) {
	t := wake.Target{ReadOnly: m.wake.ReadOnly, Hidden: m.wake.Hidden, Shell: m.wake.Shell}
	if row.Agent == "" {
		return t, nil
	}
	a, err := m.agents.Agent(ctx, row.Agent)
	if err != nil {
		return t, agentGone(err, row)
	}
	t.AgentID, t.Workspace = a.ID, a.Workspace
	if t.Denied, err = m.agents.DeniedPaths(ctx, a.ID); err != nil {
		return t, fmt.Errorf("reading the agent's deny rules: %w", err)
	}
	return t, nil
}

// checkFiring runs a firing's wake check: nil verdict and no error for a schedule
// without conditions; a cron.NotStarted error when the check says not to wake.
func (m *Manager) checkFiring(ctx context.Context, row *store.Schedule, f cron.Firing) (*wake.Verdict, error) {
	if row.When == nil || m.wake.Engine == nil {
		return nil, nil
	}
	t, err := m.target(ctx, row)
	if err != nil {
		return nil, err
	}
	v := m.wake.Engine.Check(ctx, row.ID, wake.Conditions(*row.When), t)
	if v.Surface {
		m.surface(ctx, row, v)
	}
	if v.Wake || f.Manual { // a person asked: the run starts whatever the check says, from what it found
		return v, nil
	}
	m.log.Info("scheduled firing not run", "schedule", row.Name, "firing", f.ID, "outcome", v.Outcome, "reason", v.Reason)
	return nil, &cron.NotStarted{Outcome: api.RunOutcome(v.Outcome), Reason: v.Reason}
}

// started tells the engine the run a verdict woke has started: the next firings compare
// with what this one saw.
func (m *Manager) started(ctx context.Context, v *wake.Verdict) {
	if v == nil {
		return
	}
	if err := m.wake.Engine.Started(context.WithoutCancel(ctx), v); err != nil {
		m.log.Warn("schedules: storing what a run started from", "schedule", v.ScheduleID, "err", err)
	}
}

// surface tells a schedule's delivery channel, once, that its check has failed
// fail_after times in a row (schedule show and doctor read it from the store).
func (m *Manager) surface(ctx context.Context, row *store.Schedule, v *wake.Verdict) {
	then := "firings skip until it passes (--when-failed skip)"
	if row.When.OnFailure == wake.OnFailureWake {
		then = "firings now wake the model, which is told why (--when-failed wake)"
	}
	m.log.Warn("schedule check failing", "schedule", row.Name, "failures", v.Failures, "reason", v.Reason)
	d, ok := m.chatOf(row)
	if !ok {
		return
	}
	text := fmt.Sprintf("⚠️ Schedule %s: its check failed %d times in a row: %s; %s. See agentctl schedule show %s",
		row.Name, v.Failures, v.Reason, then, row.Name)
	go func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), chatTimeout)
		defer cancel()
		if err := m.chat.Note(ctx, d.platform, d.channel, "", text); err != nil {
			m.log.Warn("schedules: posting a failing check to chat", "schedule", row.Name, "err", err)
		}
	}()
}

// wakeStatus is what a schedule's checks left, for schedule show.
func wakeStatus(tx *store.Tx, row *store.Schedule) (*api.WakeStatus, error) {
	if row.When == nil {
		return nil, nil
	}
	w, err := tx.WakeState(row.ID)
	if errors.Is(err, store.ErrNotFound) {
		return &api.WakeStatus{}, nil
	}
	if err != nil {
		return nil, err
	}
	after := cmp.Or(row.When.FailAfter, wake.DefaultFailAfter)
	return &api.WakeStatus{SeenAt: w.SeenAt, Failures: w.Failures, Failing: w.Failures >= after,
		LastError: w.LastError, FailedAt: w.FailedAt}, nil
}

// SetScheduleWhen replaces a schedule's wake conditions, checked as add checks them;
// empty ones clear them. A new condition has nothing to compare with: its first firing
// wakes the model once.
func (m *Manager) SetScheduleWhen(ctx context.Context, ref string, when api.WakeConditions) (*api.Schedule, error) {
	row, err := m.find(ctx, ref)
	if err != nil {
		return nil, err
	}
	c, err := m.checkWhen(ctx, &when, row)
	if err != nil {
		return nil, err
	}
	err = m.st.Tx(ctx, func(tx *store.Tx) error {
		if err := tx.SetScheduleConditions(row.ID, c); err != nil {
			return err
		}
		row.When = c
		return nil
	})
	if err != nil {
		return nil, err
	}
	m.log.Info("schedule conditions set", "schedule", row.Name, "when", wake.Conditions(when).String())
	return m.Schedule(ctx, row.ID)
}

// WakeChecks are agentctl doctor's lines about schedules' wake checks: one failing line
// per schedule whose checks failed fail_after times in a row, or one ok line when every
// schedule with conditions checks fine (none without such schedules).
func (m *Manager) WakeChecks(ctx context.Context) []api.Check {
	var out []api.Check
	var with int
	err := m.st.View(ctx, func(tx *store.Tx) error {
		rows, err := tx.Schedules()
		if err != nil {
			return err
		}
		for _, row := range rows {
			w, err := wakeStatus(tx, row)
			if err != nil {
				return err
			}
			if w == nil {
				continue
			}
			with++
			if w.Failing {
				out = append(out, api.Check{Name: "schedule " + row.Name, Status: api.CheckFail,
					Detail: fmt.Sprintf("its wake check failed %d times in a row: %s", w.Failures, w.LastError),
					Fix:    "see agentctl schedule show " + row.Name + "; fix the path, URL or command, or change them with agentctl schedule edit " + row.Name + " --when…"})
			}
		}
		return nil
	})
	switch {
	case err != nil:
		return []api.Check{{Name: "schedules", Status: api.CheckWarn, Detail: "reading the schedules' wake checks: " + err.Error()}}
	case len(out) == 0 && with > 0:
		return []api.Check{{Name: "schedules", Status: api.CheckOK, Detail: fmt.Sprintf("%d schedules' wake checks run", with)}}
	}
	return out
}

// CheckWhenForm checks the form of wake conditions (no I/O: whether a path exists is
// AddSchedule's check) and returns them in agentctl's words, for a form checked as it
// is typed (the web console's).
func CheckWhenForm(when api.WakeConditions) (string, error) {
	c, err := wake.Conditions(when).Check()
	if err != nil {
		return "", err
	}
	return c.String(), nil
}
