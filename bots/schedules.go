package bots

import (
	"context"
	"fmt"

	"github.com/agentd/agentd/daemon/store"
)

// The relay delivers scheduled runs (schedules.Chat): a schedule whose delivery is
// PLATFORM:CHANNEL gets a thread in that channel for each run, bound like a run started
// from chat, so it is decided there by the channel's approvers. The platform picks the
// adapter, so every adapter added to the relay can take deliveries.

// CheckChannel says why platform's channel cannot take a schedule's runs, or nil.
func (r *Relay) CheckChannel(platform, channel string) error {
	ep := r.endpoint(platform)
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
	ep := r.endpoint(platform)
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
	return r.bind(ctx, store.Binding{Platform: platform, Channel: channel, Thread: thread, AgentID: agentID, RunID: runID, CreatedBy: by})
}

// Note posts a line in a thread ("" at the channel's top level).
func (r *Relay) Note(ctx context.Context, platform, channel, thread, text string) error {
	ep := r.endpoint(platform)
	if ep == nil {
		return fmt.Errorf("no %s bot", platform)
	}
	_, err := ep.a.Post(ctx, channel, thread, FormatNote(text))
	return err
}

// RunThread returns the channel and thread runID is bound to on platform.
func (r *Relay) RunThread(platform, runID string) (channel, thread string, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, m := range r.bound {
		if b := m[platform]; b != nil && b.RunID == runID {
			return b.Channel, b.Thread, true
		}
	}
	return "", "", false
}
