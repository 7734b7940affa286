package discord

import (
	"context"
	"errors"
	"fmt"

	"github.com/bwmarrin/discordgo"

	"github.com/agentd/agentd/bots"
)

// Discord archives a thread after a week without messages, and a moderator may archive or
// lock one any time; a run's thread can live longer than that. The rules the bot meets:
// sending in an archived thread unarchives it, but editing a message there fails with
// 50083 until the thread is unarchived (PATCH archived=false); a locked thread refuses
// both (160005) and cannot be unarchived without MANAGE_THREADS. So an edit that meets
// 50083 unarchives and tries again, and a thread that cannot be reopened is continued in
// a new one, started from a message in the same channel that links the old thread.

// Discord's error codes for threads.
const (
	codeThreadArchived     = 50083
	codeThreadLocked       = 160005
	codeMissingPermissions = 50013
)

// restCode is the Discord error code of a failed REST call, 0 for other errors.
func restCode(err error) int {
	var re *discordgo.RESTError
	if errors.As(err, &re) && re.Message != nil {
		return re.Message.Code
	}
	return 0
}

// closedThread reports whether err says the thread is archived or locked.
func closedThread(err error) bool {
	c := restCode(err)
	return c == codeThreadArchived || c == codeThreadLocked
}

// unarchive reopens an archived thread.
func (b *Bot) unarchive(ctx context.Context, thread string) error {
	no := false
	if _, err := b.s.ChannelEdit(thread, &discordgo.ChannelEdit{Archived: &no}, discordgo.WithContext(ctx)); err != nil {
		return fmt.Errorf("discord: unarchiving thread %s: %w", thread, err)
	}
	b.log.Info("discord: unarchived a thread to write in it", "thread", thread)
	return nil
}

// moved returns the thread that continues thread, or thread itself.
func (b *Bot) moved(thread string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if to, ok := b.continued[thread]; ok {
		return to
	}
	return thread
}

// origin returns the thread a continuation thread continues, or thread itself: the relay
// knows the run by its first thread.
func (b *Bot) origin(thread string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if from, ok := b.continues[thread]; ok {
		return from
	}
	return thread
}

// continueThread starts the thread that carries on from old, which can no longer be
// written in: from a message in old's channel that links it, so people find both.
func (b *Bot) continueThread(ctx context.Context, old string) (string, error) {
	if to := b.moved(old); to != old {
		return to, nil
	}
	parent, err := b.parent(ctx, old)
	if err != nil || parent == "" {
		return "", fmt.Errorf("discord: thread %s is closed and its channel is unknown: %w", old, err)
	}
	if to := b.recallContinuation(ctx, parent, old); to != "" {
		return to, nil
	}
	note := fmt.Sprintf("🧵 Continued from <#%s>, which is locked: this run's proposals and results go on in this message's thread.", old)
	root, err := b.s.ChannelMessageSendComplex(parent, Message{Content: note}.Send(), discordgo.WithContext(ctx))
	if err != nil {
		return "", fmt.Errorf("discord: continuing locked thread %s: %w", old, err)
	}
	th, err := b.s.MessageThreadStartComplex(parent, root.ID, &discordgo.ThreadStart{Name: "Continued run", AutoArchiveDuration: 10080},
		discordgo.WithContext(ctx))
	if err != nil {
		return "", fmt.Errorf("discord: continuing locked thread %s: %w", old, err)
	}
	b.mu.Lock()
	if to, ok := b.continued[old]; ok { // another post got there first
		b.mu.Unlock()
		return to, nil
	}
	b.continued[old], b.continues[th.ID], b.parents[th.ID] = th.ID, old, parent
	b.mu.Unlock()
	b.log.Warn("discord: a run's thread is locked; continuing in a new thread", "old", old, "new", th.ID)
	b.keepContinuation(ctx, parent, old, th.ID)
	return th.ID, nil
}

// ThreadMover is what the Relay may also do (*bots.Relay does): take what is bound to a
// thread over to the thread that continues it, and store it; and tell, after a restart,
// where a thread's run went on.
type ThreadMover interface {
	ThreadMoved(ctx context.Context, platform, channel, from, to string) (moved bool, err error)
	MovedTo(ctx context.Context, platform, channel, thread string) (string, error)
}

var _ ThreadMover = (*bots.Relay)(nil) // the daemon's relay keeps continuations

// recallContinuation returns the thread the relay has old's run going on in (this bot
// started it before a restart), "" when there is none: then old is continued anew.
func (b *Bot) recallContinuation(ctx context.Context, parent, old string) string {
	m, ok := b.opt.Relay.(ThreadMover)
	if !ok {
		return ""
	}
	to, err := m.MovedTo(ctx, Platform, parent, old)
	if err != nil || to == "" {
		return ""
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if prev, ok := b.continued[old]; ok {
		return prev
	}
	b.continued[old], b.parents[to] = to, parent
	return to
}

// keepContinuation has the relay bind the run to the new thread, so that it is posted
// there and replies there reach it after a restart too (the maps above live in memory).
// Once bound, the new thread answers for itself: replies there are no longer read as
// the old thread's.
func (b *Bot) keepContinuation(ctx context.Context, parent, old, next string) {
	m, ok := b.opt.Relay.(ThreadMover)
	if !ok {
		return
	}
	moved, err := m.ThreadMoved(ctx, Platform, parent, old, next)
	if err != nil {
		b.log.Error("discord: the new thread of a locked one is not stored; after a restart, replies there reach no run", "old", old, "new", next, "err", err)
		return
	}
	if moved {
		b.mu.Lock()
		delete(b.continues, next)
		b.mu.Unlock()
	}
}

// send posts in channel (a thread, maybe closed): an archived thread is unarchived, a
// locked one continued in a new thread. msg is called for each try (files are readers,
// used up by a send). It returns the message and where it went.
func (b *Bot) send(ctx context.Context, to string, msg func() *discordgo.MessageSend) (*discordgo.Message, error) {
	to = b.moved(to)
	sent, err := b.s.ChannelMessageSendComplex(to, msg(), discordgo.WithContext(ctx))
	if !closedThread(err) {
		return sent, err
	}
	if restCode(err) == codeThreadArchived && b.unarchive(ctx, to) == nil {
		return b.s.ChannelMessageSendComplex(to, msg(), discordgo.WithContext(ctx))
	}
	next, cerr := b.continueThread(ctx, to)
	if cerr != nil {
		return nil, errors.Join(err, cerr)
	}
	return b.s.ChannelMessageSendComplex(next, msg(), discordgo.WithContext(ctx))
}

// edit replaces a message in channel (a thread, maybe archived): on 50083 the thread is
// unarchived and the edit tried again, so a decision lands and its buttons go even in a
// thread archived for a week. When the thread cannot be reopened (locked), the message is
// posted again where the run continues, so the decision is still shown.
func (b *Bot) edit(ctx context.Context, channel, id string, m func() Message) error {
	_, err := b.s.ChannelMessageEditComplex(m().Edit(channel, id), discordgo.WithContext(ctx))
	if restCode(err) != codeThreadArchived {
		return err
	}
	uerr := b.unarchive(ctx, channel)
	if uerr == nil {
		_, err = b.s.ChannelMessageEditComplex(m().Edit(channel, id), discordgo.WithContext(ctx))
		return err
	}
	b.log.Warn("discord: cannot edit in a closed thread; posting the update where the run continues", "thread", channel, "err", uerr)
	_, err = b.send(ctx, channel, func() *discordgo.MessageSend { return m().Send() })
	return err
}
