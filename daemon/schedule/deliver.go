package schedule

import (
	"cmp"
	"context"
	"fmt"
	"strings"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/daemon/schedule/cron"
	"github.com/agentd/agentd/daemon/store"
	"github.com/agentd/agentd/internal/display"
)

// Chat posts scheduled runs to chat channels. The bots' relay implements it; the
// platform part of a delivery ("slack" in "slack:C0123") picks its adapter, so a new
// platform needs no change here.
type Chat interface {
	// CheckChannel says why platform's channel cannot take a schedule's runs (no such
	// bot, or a channel it does not serve), or nil.
	CheckChannel(platform, channel string) error
	// StartRunThread starts a thread for a run in channel under a new message with
	// header (one line) and details.
	StartRunThread(ctx context.Context, platform, channel, header, details string) (thread string, err error)
	// BindRun binds an agent's events to the thread: from then on its proposals,
	// questions, results and finish are posted there and decided there. by names who
	// the binding is made for.
	BindRun(ctx context.Context, platform, channel, thread, agentID, runID, by string) error
	// Note posts a line in the thread ("" at the channel's top level).
	Note(ctx context.Context, platform, channel, thread, text string) error
	// RunThread returns the channel and thread runID is bound to on platform.
	RunThread(ctx context.Context, platform, runID string) (channel, thread string, ok bool)
}

// delivery is a parsed delivery target; platform "" is agentctl.
type delivery struct{ platform, channel string }

// parseDelivery reads "agentctl" (or "") and PLATFORM:CHANNEL_ID.
func parseDelivery(s string) (delivery, error) {
	s = strings.TrimSpace(s)
	if s == "" || strings.EqualFold(s, api.DeliveryAgentctl) {
		return delivery{}, nil
	}
	platform, channel, ok := strings.Cut(s, ":")
	platform, channel = strings.ToLower(strings.TrimSpace(platform)), strings.TrimSpace(channel)
	if !ok || platform == "" || channel == "" || strings.ContainsAny(channel, " \t\n/#") {
		return delivery{}, fmt.Errorf("delivery %q: use agentctl (the default) or a chat channel as PLATFORM:CHANNEL_ID, e.g. slack:C0123ABCD or discord:123456789012345678", s)
	}
	return delivery{platform: platform, channel: channel}, nil
}

func (d delivery) String() string {
	if d.platform == "" {
		return api.DeliveryAgentctl
	}
	return d.platform + ":" + d.channel
}

// checkDelivery validates a schedule's delivery against the chat bots there are.
func (m *Manager) checkDelivery(s string) (string, error) {
	d, err := parseDelivery(s)
	if err != nil {
		return "", badRequest("%v", err)
	}
	if d.platform == "" {
		return d.String(), nil
	}
	if m.chat == nil {
		return "", badRequest("delivery %s: no chat bot is enabled in this agentd: enable [%s] in the config and restart agentd, or use agentctl (the default)", d, d.platform)
	}
	if err := m.chat.CheckChannel(d.platform, d.channel); err != nil {
		return "", badRequest("delivery %s: %v", d, err)
	}
	return d.String(), nil
}

// chatOf returns where a schedule's runs are posted; ok is false for agentctl, or when
// the bot is gone (a stored delivery the config no longer serves: logged, not fatal).
func (m *Manager) chatOf(row *store.Schedule) (delivery, bool) {
	d, err := parseDelivery(row.Delivery)
	if err != nil || d.platform == "" || m.chat == nil {
		if d.platform != "" {
			m.log.Warn("schedule delivery not possible: no chat bot", "schedule", row.Name, "delivery", row.Delivery)
		}
		return delivery{}, false
	}
	if err := m.chat.CheckChannel(d.platform, d.channel); err != nil {
		m.log.Warn("schedule delivery not possible", "schedule", row.Name, "delivery", row.Delivery, "err", err)
		return delivery{}, false
	}
	return d, true
}

// openThread starts the thread a firing's run is posted in.
func (m *Manager) openThread(ctx context.Context, d delivery, row *store.Schedule, f cron.Firing) (string, error) {
	how := "fired at " + f.Scheduled.Format("Mon 2006-01-02 15:04 MST")
	if f.Manual {
		how = "run now at " + f.Scheduled.Format("Mon 2006-01-02 15:04 MST")
	}
	header := fmt.Sprintf("🗓 Scheduled run of %s, %s", row.Name, how)
	details := "Goal: " + display.Cut(row.Goal, 500, display.Ellipsis)
	thread, err := m.chat.StartRunThread(ctx, d.platform, d.channel, header, details)
	if err != nil {
		return "", fmt.Errorf("posting to %s: %w", d, err)
	}
	return thread, nil
}

// runThread returns the delivery and thread of a scheduled run, if it has one.
func (m *Manager) runThread(ctx context.Context, row *store.Schedule, runID string) (delivery, string, bool) {
	d, ok := m.chatOf(row)
	if !ok || runID == "" {
		return d, "", false
	}
	ch, thread, ok := m.chat.RunThread(ctx, d.platform, runID)
	if !ok || ch != d.channel {
		return d, "", false
	}
	return d, thread, true
}

// announce posts, for a chat-delivered schedule, what became of a firing that started
// no run (skipped, missed, failed to start) and how a run ended. Chat errors are logged.
// A quiet firing (nothing_to_do) posts nothing, nor does a failed check: surface posts
// the fail_after-th in a row.
func (m *Manager) announce(ctx context.Context, r cron.Record) {
	switch r.Outcome {
	case api.RunStarted, api.RunQueued, api.RunNothingToDo, api.RunCheckFailed:
		return
	}
	if m.chat == nil {
		return
	}
	row, err := store.Read(ctx, m.st, func(tx *store.Tx) (*store.Schedule, error) { return tx.Schedule(r.ScheduleID) })
	if err != nil {
		return
	}
	d, ok := m.chatOf(row)
	if !ok {
		return
	}
	var text, thread string
	if r.RunID != "" {
		_, thread, _ = m.runThread(ctx, row, r.RunID)
		text = endText(row.Name, r)
	} else {
		text = firingText(row.Name, r)
	}
	if err := m.chat.Note(ctx, d.platform, d.channel, thread, text); err != nil {
		m.log.Warn("schedules: posting to chat", "schedule", row.Name, "delivery", d, "err", err)
	}
}

// endText tells how a scheduled run ended.
func endText(name string, r cron.Record) string {
	var s string
	switch r.Outcome {
	case api.RunFinished:
		s = "✅ Scheduled run of " + name + " finished"
	case api.RunBudgetExhausted:
		s = "⛽ Scheduled run of " + name + " stopped: budget exhausted"
	default:
		s = "❌ Scheduled run of " + name + " failed"
	}
	s += fmt.Sprintf(" after %d steps, %d tokens", r.Steps, r.Tokens)
	if r.Reason != "" {
		s += ": " + r.Reason
	}
	return s
}

// firingText tells why a firing started no run.
func firingText(name string, r cron.Record) string {
	when := r.Scheduled.Format("Mon 2006-01-02 15:04 MST")
	switch r.Outcome {
	case api.RunSkipped:
		return fmt.Sprintf("⏭ Schedule %s skipped its firing of %s: %s", name, when, cmp.Or(r.Reason, "-"))
	case api.RunMissed:
		return fmt.Sprintf("⏰ Schedule %s missed its firing of %s: %s", name, when, cmp.Or(r.Reason, "-"))
	}
	return fmt.Sprintf("❌ Schedule %s could not start its run of %s: %s", name, when, cmp.Or(r.Reason, "-"))
}
