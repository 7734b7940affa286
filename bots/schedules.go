package bots

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/agentd/agentd/api"
)

// The relay delivers scheduled runs (schedule.Chat): a schedule whose delivery is
// PLATFORM:CHANNEL gets a thread in that channel for each run, bound like a run started
// from chat, so it is decided there by the channel's approvers. The platform picks the
// adapter, so every adapter added to the relay can take deliveries.

// CheckChannel says why platform's channel cannot take a schedule's runs, or nil.
func (r *Relay) CheckChannel(platform, channel string) error {
	ep := r.eps.get(platform)
	if ep == nil {
		return fmt.Errorf("no %s bot is enabled in this agentd: enable [%s] in the config and restart agentd", platform, platform)
	}
	if _, ok := ep.rules.Channels[channel]; !ok {
		return fmt.Errorf("the %s bot does not serve channel %s: add it under [%s.channels] in the config and restart agentd", platform, channel, platform)
	}
	return nil
}

// StartRunThread starts a thread in channel under a new message with header, and posts
// details in it.
func (r *Relay) StartRunThread(ctx context.Context, platform, channel, header, details string) (string, error) {
	ep := r.eps.get(platform)
	if ep == nil {
		return "", fmt.Errorf("no %s bot", platform)
	}
	thread, err := ep.a.StartThread(ctx, channel, "", header)
	if err != nil {
		return "", err
	}
	if details != "" {
		if _, err := ep.a.Post(ctx, channel, thread, FormatNote(details)); err != nil {
			r.log.Error("bots: posting a scheduled run's details", "platform", platform, "err", err)
		}
	}
	return thread, nil
}

// BindRun binds an agent (and its run, once known) to a thread, as a run started there.
func (r *Relay) BindRun(ctx context.Context, platform, channel, thread, agentID, runID, by string) error {
	return r.bind(ctx, Binding{Platform: platform, Channel: channel, Thread: thread, AgentID: agentID, RunID: runID, CreatedBy: by})
}

// Note posts a line in a thread ("" at the channel's top level).
func (r *Relay) Note(ctx context.Context, platform, channel, thread, text string) error {
	ep := r.eps.get(platform)
	if ep == nil {
		return fmt.Errorf("no %s bot", platform)
	}
	_, err := ep.a.Post(ctx, channel, thread, FormatNote(text))
	return err
}

// RunThread returns the channel and thread runID is bound to on platform.
func (r *Relay) RunThread(ctx context.Context, platform, runID string) (channel, thread string, ok bool) {
	bs, err := r.opt.Bindings.Bindings(ctx)
	if err != nil {
		r.log.Error("bots: reading chat bindings", "err", err)
	}
	for _, b := range bs {
		if b.Platform == platform && b.RunID == runID {
			return b.Channel, b.Thread, true
		}
	}
	return "", "", false
}

// Schedules is the part of the schedules' manager the /agent schedule command uses.
type Schedules interface {
	Schedules(ctx context.Context) ([]api.Schedule, error)
	RunSchedule(ctx context.Context, ref string) (*api.ScheduleRun, error)
}

// SetSchedules lets /agent schedule list and fire schedules. Call it before Run (the
// schedules' manager is made after the relay, since it delivers through it).
func (r *Relay) SetSchedules(s Schedules) {
	r.schedules.Store(&s)
}

const scheduleUsage = "Usage: /agent schedule ls | run NAME | when NAME --when-changed PATH… (or --when-none)"

// scheduleCommand is /agent schedule ls|run NAME|when NAME FLAGS.
func (r *Relay) scheduleCommand(ctx context.Context, ep *endpoint, w Where, u User, text string) string {
	var s Schedules
	if p := r.schedules.Load(); p != nil {
		s = *p
	}
	if s == nil {
		return "Schedules are not available in this agentd."
	}
	verb, name, _ := strings.Cut(strings.TrimSpace(text), " ")
	name = strings.TrimSpace(name)
	switch verb {
	case "when":
		return r.scheduleWhen(ctx, s, ep, w, u, name)
	case "ls", "list":
		here, err := r.channelSchedules(ctx, s, ep.a.Platform(), w)
		if err != nil {
			return err.Error()
		}
		return schedulesText(here)
	case "run":
		if name == "" {
			return scheduleUsage
		}
		if !r.allowed(ctx, ep, w, "", u) {
			r.log.Warn("bots: refused a non-approver", "platform", ep.a.Platform(), "user", u.ID, "schedule", name, "action", "schedule run")
			return "You are not an approver here, so this changed nothing."
		}
		sc, problem := r.channelSchedule(ctx, s, ep, w, name)
		if sc == nil {
			return problem
		}
		name = sc.Name
		rec, err := s.RunSchedule(ctx, sc.ID)
		if err != nil {
			return err.Error()
		}
		r.log.Info("bots: schedule fired from chat", "platform", ep.a.Platform(), "schedule", name, "user", u.ID, "outcome", rec.Outcome)
		switch rec.Outcome {
		case api.RunStarted:
			return fmt.Sprintf("Schedule %s fired: its run started and goes to the schedule's delivery.", name)
		case api.RunQueued:
			return fmt.Sprintf("Schedule %s fired: the run waits for the one still going.", name)
		}
		return fmt.Sprintf("Schedule %s fired: %s: %s", name, rec.Outcome, orDash(rec.Reason))
	}
	return scheduleUsage
}

// channelSchedules are the schedules whose runs are delivered to w's channel on
// platform: a channel sees and fires those, nothing else (a schedule's goal and spec can
// be as private as an agent's task).
func (r *Relay) channelSchedules(ctx context.Context, s Schedules, platform string, w Where) ([]api.Schedule, error) {
	all, err := s.Schedules(ctx)
	if err != nil {
		return nil, err
	}
	var here []api.Schedule
	for _, sc := range all {
		p, ch, ok := strings.Cut(strings.TrimSpace(sc.Delivery), ":")
		if ok && strings.EqualFold(strings.TrimSpace(p), platform) && strings.TrimSpace(ch) == w.Channel && w.Channel != "" {
			here = append(here, sc)
		}
	}
	return here, nil
}

// channelSchedule finds schedule name (or id) among those delivering to w's channel, or
// says why not: one delivering elsewhere is answered as if it did not exist.
func (r *Relay) channelSchedule(ctx context.Context, s Schedules, ep *endpoint, w Where, name string) (*api.Schedule, string) {
	here, err := r.channelSchedules(ctx, s, ep.a.Platform(), w)
	if err != nil {
		return nil, err.Error()
	}
	i := slices.IndexFunc(here, func(sc api.Schedule) bool { return sc.Name == name || sc.ID == name })
	if i < 0 {
		return nil, fmt.Sprintf("There is no schedule %q in this channel; /agent schedule ls lists the ones delivering here.", cut(name, 80))
	}
	return &here[i], ""
}

func schedulesText(all []api.Schedule) string {
	if len(all) == 0 {
		return "No schedules deliver to this channel. Add one with `agentctl schedule add --delivery PLATFORM:CHANNEL`."
	}
	var b strings.Builder
	for _, s := range all {
		state := "next " + s.Next.Format("Mon 2006-01-02 15:04 MST")
		switch {
		case s.Paused:
			state = "paused"
		case s.Next.IsZero():
			state = "fires no more"
		}
		if len(s.Running) > 0 {
			state += fmt.Sprintf(", %d running", len(s.Running))
		}
		fmt.Fprintf(&b, "• %s `%s` → %s (%s): %s\n", s.Name, s.Spec, s.Delivery, state, cut(s.Goal, 80))
		if s.When != nil {
			fmt.Fprintf(&b, "  wakes the model %s\n", cut(whenText(s.When), 200))
		}
	}
	return strings.TrimRight(b.String(), "\n")
}
