package discord

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/agentd/agentd/bots"
)

// classify marks errors that retrying cannot fix (a 4xx other than 429: unknown
// channel, missing access, a bad form) so the relay's outbox drops the post instead of
// retrying; 5xx and network errors are retried.
func classify(err error) error {
	var re *discordgo.RESTError
	if errors.As(err, &re) && re.Response != nil {
		return bots.PermanentStatus(err, re.Response.StatusCode)
	}
	return err
}

// StartThread implements bots.Adapter: a thread started from anchor (the message that
// asked; the thread takes its ID), or from a new message with title. In a direct
// message, which has no threads, the conversation itself is the thread; an anchor that
// is a thread already is reused.
func (b *Bot) StartThread(ctx context.Context, channel, anchor, title string) (string, error) {
	b.mu.Lock()
	dm := b.parents[channel] == channel
	b.mu.Unlock()
	if dm {
		return channel, nil
	}
	if anchor != "" {
		if p, _ := b.parent(ctx, anchor); p != "" {
			return anchor, nil
		}
	}
	if anchor == "" {
		id, err := b.Post(ctx, channel, "", bots.FormatNote(title))
		if err != nil {
			return "", err
		}
		_, anchor, _ = strings.Cut(id, "/")
	}
	th, err := b.s.MessageThreadStartComplex(channel, anchor, &discordgo.ThreadStart{
		Name: Truncate(strings.ReplaceAll(title, "\n", " "), 100), AutoArchiveDuration: 10080,
	}, discordgo.WithContext(ctx))
	if err != nil {
		return "", fmt.Errorf("discord: starting a thread: %w", err)
	}
	b.mu.Lock()
	b.parents[th.ID] = channel
	b.mu.Unlock()
	return th.ID, nil
}

// Post implements bots.Adapter. The id returned is "CHANNEL/MESSAGE": a message in a
// thread is edited through the thread, which the relay does not track. A closed thread
// is reopened, or continued in a new one (see send).
func (b *Bot) Post(ctx context.Context, channel, thread string, m bots.Message) (string, error) {
	to := cmp.Or(thread, channel)
	sent, err := b.send(ctx, to, func() *discordgo.MessageSend { return FromMessage(m).Send() })
	if err != nil {
		return "", classify(fmt.Errorf("discord: posting: %w", err))
	}
	return sent.ChannelID + "/" + sent.ID, nil
}

// Update implements bots.Adapter: content, buttons and attachments are replaced (no
// buttons left once a proposal is decided; the file, if any, is the new text's), in an
// archived thread too; in one the bot can no longer write in, the update is posted where
// the run goes on, headed by a link to the old thread (threads.go).
func (b *Bot) Update(ctx context.Context, _, id string, m bots.Message) error {
	to, msg, ok := strings.Cut(id, "/")
	if !ok {
		return fmt.Errorf("discord: bad message reference %q", id)
	}
	moved := func(why string) Message {
		return render(m, fmt.Sprintf("↪ This updates a message in <#%s>, %s:", to, why))
	}
	if err := b.edit(ctx, to, msg, func() Message { return FromMessage(m) }, moved); err != nil {
		return classify(fmt.Errorf("discord: editing: %w", err))
	}
	return nil
}

// PostFile implements bots.Adapter: the content as an attached text file.
func (b *Bot) PostFile(ctx context.Context, channel, thread, name, content, comment string) error {
	to := cmp.Or(thread, channel)
	msg := func() *discordgo.MessageSend {
		m := fitContent(Escape(comment), comment, "comment.txt")
		m.Files = append(m.Files, textFile(name, content))
		return m.Send()
	}
	if _, err := b.send(ctx, to, msg); err != nil {
		return classify(fmt.Errorf("discord: uploading %s: %w", name, err))
	}
	return nil
}

// Ephemeral implements bots.Adapter. Discord shows messages to one person only in
// answer to an interaction (a click, a command); a typed message gets a reply that
// mentions its author instead.
func (b *Bot) Ephemeral(ctx context.Context, channel, thread, user, text string) error {
	if r := responderFrom(ctx); r != nil {
		return r.ephemeral(ctx, text)
	}
	to := cmp.Or(thread, channel)
	ref := replyTo(ctx)
	send := func() *discordgo.MessageSend {
		m := fitContent(Who(user)+" "+Escape(text), text, "note.txt")
		s := m.Send()
		s.AllowedMentions = &discordgo.MessageAllowedMentions{Parse: []discordgo.AllowedMentionType{}, Users: []string{user}}
		if ref != "" {
			// A message in a thread that moved (its run continues elsewhere) cannot be
			// replied to from the new thread: then the note goes as no reply.
			no := false
			s.Reference = &discordgo.MessageReference{MessageID: ref, ChannelID: b.moved(to), FailIfNotExists: &no}
		}
		return s
	}
	if _, err := b.send(ctx, to, send); err != nil {
		return fmt.Errorf("discord: replying: %w", err)
	}
	return nil
}

// OpenFeedback implements bots.Adapter: the feedback modal is the click's response, so
// it can only open while the click is being handled.
func (b *Bot) OpenFeedback(ctx context.Context, _ string, ref bots.Ref, prompt string) error {
	r := responderFrom(ctx)
	if r == nil {
		return errors.New("discord: a feedback dialog opens only in answer to a click")
	}
	return r.respond(ctx, feedbackModalFor(ref, prompt))
}

// memberTTL is how long a member's roles are trusted before asking Discord again.
const memberTTL = time.Minute

// InGroup implements bots.Adapter: group is a role ID. The roles come with the click or
// message being handled; otherwise they are read from the configured guilds.
func (b *Bot) InGroup(ctx context.Context, user, group string) (bool, error) {
	if a, ok := ctx.Value(actorKey{}).(Actor); ok && a.UserID == user {
		return slices.Contains(a.Roles, group), nil
	}
	roles, ok := b.members.Get(user, bots.For[[]string](memberTTL))
	if !ok {
		roles = nil
		for _, g := range b.opt.Guilds {
			m, err := b.s.GuildMember(g, user, discordgo.WithContext(ctx))
			var re *discordgo.RESTError
			if errors.As(err, &re) && re.Response != nil && re.Response.StatusCode == 404 {
				continue
			}
			if err != nil {
				return false, fmt.Errorf("discord: reading member %s: %w", user, err)
			}
			roles = append(roles, m.Roles...)
		}
		b.members.Put(user, roles)
	}
	return slices.Contains(roles, group), nil
}
