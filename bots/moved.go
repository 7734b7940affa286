package bots

import (
	"context"
	"fmt"
)

// ThreadMoved takes what is bound to thread from (in channel, on platform) over to thread
// to, and stores it: an adapter calls it when it continues a thread it can no longer
// write in (Discord: a locked thread) in a new one. The relay then posts in the new
// thread, and replies there reach the run, after a restart too. The old thread keeps its
// run's binding, so a button still on a message there names the run. moved is false when
// nothing was bound to from.
func (r *Relay) ThreadMoved(ctx context.Context, platform, channel, from, to string) (moved bool, err error) {
	b, err := r.opt.Bindings.BindingByThread(ctx, platform, channel, from)
	if err != nil {
		return false, fmt.Errorf("bots: reading the binding of thread %s, continued in %s: %w", from, to, err)
	}
	if b != nil {
		nb := *b
		nb.Thread = to
		if err := r.bind(ctx, nb); err != nil {
			return false, fmt.Errorf("bots: binding thread %s, which continues %s: %w", to, from, err)
		}
		r.log.Info("bots: a run's thread continues in a new one", "platform", platform, "agent", b.AgentID, "from", from, "to", to)
		return true, nil
	}
	tb := r.opt.Bindings
	t, err := tb.TeamBindingByThread(ctx, platform, channel, from)
	if err != nil || t == nil {
		return false, err
	}
	nt := *t
	nt.Thread = to
	// One thread per team run and platform: the new one replaces the old.
	if err := tb.BindTeam(ctx, nt); err != nil {
		return false, fmt.Errorf("bots: binding thread %s, which continues team run %s's %s: %w", to, t.TeamRunID, from, err)
	}
	r.log.Info("bots: a team run's thread continues in a new one", "platform", platform, "team", t.TeamRunID, "from", from, "to", to)
	return true, nil
}

// MovedTo returns the thread that carries on the run bound to thread (in channel, on
// platform) since ThreadMoved took it over, "" when the run was not moved. An adapter
// that lost its own record (a restart) asks before it continues the thread again.
func (r *Relay) MovedTo(ctx context.Context, platform, channel, thread string) (string, error) {
	b, err := r.opt.Bindings.BindingByThread(ctx, platform, channel, thread)
	if err != nil || b == nil {
		return "", err
	}
	for _, t := range r.posts.targets(ctx, b.AgentID) {
		if t.ep.a.Platform() == platform && t.b.Channel == channel && t.b.Thread != thread && t.label == "" {
			return t.b.Thread, nil
		}
	}
	return "", nil
}
