package discord

import (
	"context"
	"errors"
	"fmt"

	"github.com/bwmarrin/discordgo"

	"github.com/agentd/agentd/bots"
)

// Discord archives a thread after a week without messages, and a moderator may archive,
// lock, or take the bot's right to post in one any time; a run's thread can live longer
// than that. The rules the bot meets: sending in an archived thread unarchives it, but
// editing a message there fails with 50083 until the thread is unarchived (PATCH
// archived=false); a locked thread refuses both (160005) and cannot be unarchived without
// MANAGE_THREADS (50013); a thread where the bot lost Send Messages refuses its posts
// (50013), and one it lost access to everything (50001). So an edit that meets 50083
// unarchives and tries again; a thread that cannot be reopened or written in is continued
// in a new one, started from a message in the same channel that links the old thread;
// and an edit that cannot land is posted there instead, headed by a line naming the
// thread of the message it updates, so a decision is shown where the run goes on.

// Discord's error codes for threads and rights.
const (
	codeThreadArchived     = 50083
	codeThreadLocked       = 160005
	codeMissingPermissions = 50013
	codeMissingAccess      = 50001
)

// restCode is the Discord error code of a failed REST call, 0 for other errors.
func restCode(err error) int {
	var re *discordgo.RESTError
	if errors.As(err, &re) && re.Message != nil {
		return re.Message.Code
	}
	return 0
}

// cannotWrite reports whether err says the bot may not write in the channel as it stands
// (locked, or the right or access taken away): retrying cannot help; writing elsewhere can.
func cannotWrite(err error) bool {
	switch restCode(err) {
	case codeThreadLocked, codeMissingPermissions, codeMissingAccess:
		return true
	}
	return false
}

// whyClosed says, for the notes linking a closed thread, why the bot cannot write in it:
// err is the error that said so (cannotWrite's, or an unarchive's).
func whyClosed(err error, reopening bool) string {
	switch {
	case restCode(err) == codeThreadLocked:
		return "which is locked"
	case reopening:
		return "which is closed and I may not reopen"
	}
	return "where I may no longer post"
}

// writable makes channel writable after a call met err: an archived thread is
// unarchived (ok). It returns why, for the notes, when the channel cannot be written in
// by the bot at all; and a failure worth retrying as an error.
func (b *Bot) writable(ctx context.Context, channel string, err error) (ok bool, why string, _ error) {
	if restCode(err) != codeThreadArchived {
		if cannotWrite(err) {
			return false, whyClosed(err, false), nil
		}
		return false, "", err
	}
	uerr := b.unarchive(ctx, channel)
	switch {
	case uerr == nil:
		return true, "", nil
	case cannotWrite(uerr):
		return false, whyClosed(uerr, true), nil
	}
	return false, "", errors.Join(err, uerr)
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
func (b *Bot) moved(thread string) string { return b.threadIn(b.continued, thread) }

// origin returns the thread a continuation thread continues, or thread itself: the relay
// knows the run by its first thread.
func (b *Bot) origin(thread string) string { return b.threadIn(b.continues, thread) }

// threadIn is what m (continued or continues) maps thread to, or thread itself.
func (b *Bot) threadIn(m map[string]string, thread string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if to, ok := m[thread]; ok {
		return to
	}
	return thread
}

// continueThread starts the thread that carries on from old, which can no longer be
// written in (why says so): from a message in old's channel that links it, so people find
// both.
func (b *Bot) continueThread(ctx context.Context, old, why string) (string, error) {
	if to := b.moved(old); to != old {
		return to, nil
	}
	parent, err := b.parent(ctx, old)
	if err != nil || parent == "" {
		return "", fmt.Errorf("discord: %s is no thread, so it cannot be continued in another: %w", old, err)
	}
	if to := b.recallContinuation(ctx, parent, old); to != "" {
		return to, nil
	}
	note := fmt.Sprintf("🧵 Continued from <#%s>, %s: this run's proposals and results go on in this message's thread.", old, why)
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
	b.log.Warn("discord: a run's thread cannot be written in; continuing in a new thread", "old", old, "new", th.ID, "why", why)
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

// send posts in channel (a thread, maybe closed): an archived thread is unarchived; one
// the bot may not write in (locked, its right to post taken) is continued in a new
// thread. msg is called for each try (files are readers, used up by a send). It returns
// the message and where it went.
func (b *Bot) send(ctx context.Context, to string, msg func() *discordgo.MessageSend) (*discordgo.Message, error) {
	to = b.moved(to)
	sent, err := b.s.ChannelMessageSendComplex(to, msg(), discordgo.WithContext(ctx))
	if err == nil {
		return sent, nil
	}
	ok, why, werr := b.writable(ctx, to, err)
	switch {
	case werr != nil:
		return nil, werr
	case ok:
		return b.s.ChannelMessageSendComplex(to, msg(), discordgo.WithContext(ctx))
	}
	next, cerr := b.continueThread(ctx, to, why)
	if cerr != nil {
		return nil, errors.Join(err, cerr)
	}
	return b.s.ChannelMessageSendComplex(next, msg(), discordgo.WithContext(ctx))
}

// edit replaces a message in channel (a thread, maybe closed): on 50083 the thread is
// unarchived and the edit tried again, so a decision lands and its buttons go even in a
// thread archived for a week. When the thread cannot be written in (locked, closed and
// locked, the bot's rights taken), the update is posted where the run continues instead
// (moved, given why), so the decision, and who made it, is still shown.
func (b *Bot) edit(ctx context.Context, channel, id string, m func() Message, moved func(why string) Message) error {
	_, err := b.s.ChannelMessageEditComplex(m().Edit(channel, id), discordgo.WithContext(ctx))
	if err == nil {
		return nil
	}
	ok, why, werr := b.writable(ctx, channel, err)
	switch {
	case werr != nil:
		return werr
	case ok:
		_, err = b.s.ChannelMessageEditComplex(m().Edit(channel, id), discordgo.WithContext(ctx))
		return err
	}
	b.log.Warn("discord: cannot edit in a thread it may not write in; posting the update where the run continues", "thread", channel, "why", why, "err", err)
	_, err = b.send(ctx, channel, func() *discordgo.MessageSend { return moved(why).Send() })
	return err
}
