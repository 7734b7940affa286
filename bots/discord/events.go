package discord

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/agentd/agentd/bots"
	"github.com/agentd/agentd/daemon/client/display"
)

// Context keys: the person acting (their roles decide group approvals) and, for an
// interaction, how to answer it; for a typed message, the message to reply to.
type (
	actorKey     struct{}
	responderKey struct{}
	replyKey     struct{}
)

func responderFrom(ctx context.Context) *responder {
	r, _ := ctx.Value(responderKey{}).(*responder)
	return r
}

func replyTo(ctx context.Context) string {
	s, _ := ctx.Value(replyKey{}).(string)
	return s
}

// handlerTimeout bounds the work done for one message or interaction.
const handlerTimeout = 30 * time.Second

// onMessage passes people's messages to the relay: tasks (mentions, direct messages)
// and replies in bound threads. Bots, this one included, are ignored.
func (b *Bot) onMessage(base context.Context, m *discordgo.MessageCreate) {
	if m.Message == nil || m.Author == nil || m.Author.Bot || m.Author.ID == b.selfID() || m.WebhookID != "" {
		return
	}
	if m.Type != discordgo.MessageTypeDefault && m.Type != discordgo.MessageTypeReply {
		return // joins, pins, thread announcements
	}
	ctx, cancel := context.WithTimeout(base, handlerTimeout)
	defer cancel()
	w, err := b.where(ctx, m.GuildID, m.ChannelID)
	if err != nil {
		b.log.Warn("discord: placing a message", "channel", m.ChannelID, "err", err)
		return
	}
	actor := MessageActor(m.Message)
	ctx = context.WithValue(ctx, actorKey{}, actor)
	ctx = context.WithValue(ctx, replyKey{}, m.ID)
	text, mentioned := b.stripMention(m.Content, m.Mentions)
	b.opt.Relay.OnMessage(ctx, bots.Incoming{Platform: Platform, Where: w, User: bots.User{ID: actor.UserID, Name: actor.Name},
		Text: text, ID: m.ID, Mention: mentioned})
}

var mentionRE = regexp.MustCompile(`<@!?([0-9]+)>`)

// stripMention removes mentions of the bot and reports whether there was one.
func (b *Bot) stripMention(text string, mentions []*discordgo.User) (string, bool) {
	self := b.selfID()
	found := false
	for _, u := range mentions {
		found = found || (u != nil && u.ID == self)
	}
	out := mentionRE.ReplaceAllStringFunc(text, func(m string) string {
		if mentionRE.FindStringSubmatch(m)[1] == self {
			found = true
			return ""
		}
		return m
	})
	return strings.TrimSpace(out), found && self != ""
}

// onInteraction handles clicks, the feedback modal's submit and /agent.
func (b *Bot) onInteraction(base context.Context, ic *discordgo.InteractionCreate) {
	i := ic.Interaction
	ctx, cancel := context.WithTimeout(base, handlerTimeout)
	defer cancel()
	actor := InteractionActor(i)
	if actor.UserID == "" || actor.Bot {
		return
	}
	r := &responder{s: b.s, i: i}
	ctx = context.WithValue(ctx, actorKey{}, actor)
	ctx = context.WithValue(ctx, responderKey{}, r)
	u := bots.User{ID: actor.UserID, Name: actor.Name}
	w, err := b.where(ctx, i.GuildID, i.ChannelID)
	if err != nil {
		b.log.Warn("discord: placing an interaction", "channel", i.ChannelID, "err", err)
		r.ephemeral(ctx, "Something went wrong on my side; try again.")
		return
	}
	switch i.Type {
	case discordgo.InteractionMessageComponent:
		b.onClick(ctx, r, w, u, i.MessageComponentData())
	case discordgo.InteractionModalSubmit:
		req, err := ParseFeedback(i.ModalSubmitData(), actor.UserID)
		if err != nil {
			b.log.Warn("discord: bad feedback submit", "err", err)
			r.ephemeral(ctx, "That dialog is not one I understand: "+err.Error())
			return
		}
		// Deferred first: the dialog closes at once, and the proposal message is edited
		// when the daemon's decision comes back.
		r.deferUpdate(ctx)
		b.opt.Relay.OnFeedback(ctx, Platform, w, u, bots.Ref{ProposalID: req.ProposalID}, req.Feedback)
	case discordgo.InteractionApplicationCommand:
		b.onCommand(ctx, r, w, u, i.ApplicationCommandData())
	}
}

func (b *Bot) onClick(ctx context.Context, r *responder, w bots.Where, u bots.User, d discordgo.MessageComponentInteractionData) {
	id, err := ParseCustomID(d.CustomID)
	if err != nil {
		var ce *CustomIDError
		if errors.As(err, &ce) {
			b.log.Warn("discord: refused a button", "user", u.ID, "err", err)
		}
		r.ephemeral(ctx, "This button is not one I can act on (it may come from an older agentd). Reply in the thread instead: y, n, or feedback.")
		return
	}
	c := bots.Click{Platform: Platform, Where: w, User: u, Action: string(id.Action), Ref: bots.Ref{ProposalID: id.ProposalID, Count: id.N}}
	switch id.Action {
	case ActionFeedback:
		// The modal must be the click's first answer, so nothing is deferred here.
		b.opt.Relay.OnClick(ctx, c)
		r.deferUpdate(ctx)
	case ActionApprove, ActionApproveN, ActionDeny:
		// Acknowledged at once (Discord wants an answer within 3 s); the message is
		// edited when the decision event comes back from the daemon.
		r.deferUpdate(ctx)
		b.opt.Relay.OnClick(ctx, c)
	default:
		r.ephemeral(ctx, "That is not a button on a proposal.")
	}
}

func (b *Bot) onCommand(ctx context.Context, r *responder, w bots.Where, u bots.User, d discordgo.ApplicationCommandInteractionData) {
	cmd, err := ParseSlash(d)
	if err != nil {
		r.ephemeral(ctx, err.Error())
		return
	}
	text := cmd.Sub
	switch cmd.Sub {
	case SubRun:
		text += " " + cmd.Task
	case SubSchedule:
		text += " " + cmd.Action + " " + cmd.Name
	case SubTeam:
		if cmd.Stop != "" {
			text += " stop " + cmd.Stop
			break
		}
		text += " " + cmd.File + " " + cmd.Task
	default:
		text += " " + cmd.Agent
	}
	// Deferred (ephemeral "thinking…"): starting a run posts and creates threads, which
	// can take longer than the 3 s Discord allows for the first answer.
	if err := r.respond(ctx, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseDeferredChannelMessageWithSource,
		Data: &discordgo.InteractionResponseData{Flags: discordgo.MessageFlagsEphemeral}}); err != nil {
		b.log.Warn("discord: answering /agent", "err", err)
		return
	}
	out := b.opt.Relay.OnCommand(ctx, Platform, w, u, strings.TrimSpace(text))
	if out == "" {
		out = "Done."
	}
	// The relay's answers are written as markdown; only mentions and invisible characters
	// are broken.
	content := Truncate(mentionBreaker.Replace(display.Escape(out, display.Text)), MaxContent)
	if _, err := b.s.InteractionResponseEdit(r.i, &discordgo.WebhookEdit{Content: &content, AllowedMentions: noMentions()}, discordgo.WithContext(ctx)); err != nil {
		b.log.Warn("discord: answering /agent", "err", err)
	}
}

// responder answers one interaction: the first answer is the interaction response, and
// later notes are ephemeral follow-ups.
type responder struct {
	s *discordgo.Session
	i *discordgo.Interaction

	mu        sync.Mutex
	responded bool
}

var errResponded = errors.New("discord: the interaction was answered already")

func (r *responder) respond(ctx context.Context, resp *discordgo.InteractionResponse) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.responded {
		return errResponded
	}
	r.responded = true
	return r.s.InteractionRespond(r.i, resp, discordgo.WithContext(ctx))
}

// deferUpdate acknowledges a click or submit without changing the message, unless it
// was answered already.
func (r *responder) deferUpdate(ctx context.Context) {
	r.respond(ctx, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseDeferredMessageUpdate})
}

// ephemeral shows text to the person who acted alone.
func (r *responder) ephemeral(ctx context.Context, text string) error {
	text = Truncate(Escape(text), MaxContent)
	err := r.respond(ctx, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseChannelMessageWithSource,
		Data: &discordgo.InteractionResponseData{Content: text, Flags: discordgo.MessageFlagsEphemeral, AllowedMentions: noMentions()}})
	if !errors.Is(err, errResponded) {
		return err
	}
	_, err = r.s.FollowupMessageCreate(r.i, true, &discordgo.WebhookParams{Content: text, Flags: discordgo.MessageFlagsEphemeral,
		AllowedMentions: noMentions()}, discordgo.WithContext(ctx))
	return err
}
