package discord

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/agentd/agentd/bots"
	"github.com/agentd/agentd/internal/display"
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
// and replies in bound threads; with edited, their edits (MESSAGE_UPDATE), which the
// relay answers. Bots, this one included, are ignored.
func (b *Bot) onMessage(base context.Context, m *discordgo.Message, edited bool) {
	if m == nil || m.Author == nil || m.Author.Bot || m.Author.ID == b.selfID() || m.WebhookID != "" {
		return
	}
	if edited && m.EditedTimestamp == nil {
		return // an update Discord made (a link's preview, a thread started from it), no edit
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
	actor := MessageActor(m)
	ctx = context.WithValue(ctx, actorKey{}, actor)
	ctx = context.WithValue(ctx, replyKey{}, m.ID)
	in := b.incoming(w, actor, m)
	in.Edited = edited
	b.opt.Relay.OnMessage(ctx, in)
}

// incoming is m, a person's message placed at w, as the relay takes it.
func (b *Bot) incoming(w bots.Where, actor Actor, m *discordgo.Message) bots.Incoming {
	text, mentioned := b.stripMention(m.Content)
	in := bots.Incoming{Platform: Platform, Where: w, User: bots.User{ID: actor.UserID, Name: actor.Name},
		Text: text, ID: m.ID, Mention: mentioned}
	if m.Type == discordgo.MessageTypeReply && m.MessageReference != nil {
		// In the form Post returns ids in (CHANNEL/MESSAGE), which the relay stored.
		ch := m.MessageReference.ChannelID
		if ch == "" {
			ch = m.ChannelID
		}
		in.ReplyTo = ch + "/" + m.MessageReference.MessageID
		if w.Thread == "" && ch == m.ChannelID {
			// A thread started from a message has that message's ID.
			in.ReplyThread = m.MessageReference.MessageID
		}
	}
	return in
}

var mentionRE = regexp.MustCompile(`<@!?([0-9]+)>`)

// stripMention removes mentions of the bot from text and reports whether there was one.
// Only the text counts: a reply pings the author of the message it answers (Discord's
// default), which puts the bot among the message's mentions though nobody named it.
func (b *Bot) stripMention(text string) (string, bool) {
	return bots.StripMention(mentionRE, b.selfID(), text)
}

// onInteraction handles clicks, the feedback modal's submit and /agent. Each is
// acknowledged before anything else is asked of Discord or the daemon (Discord drops an
// interaction not answered within 3 s), except the Feedback… click, whose first answer
// must be the modal itself.
func (b *Bot) onInteraction(base context.Context, ic *discordgo.InteractionCreate) {
	i := ic.Interaction
	ctx, cancel := context.WithTimeout(base, handlerTimeout)
	defer cancel()
	actor := InteractionActor(i)
	if actor.UserID == "" || actor.Bot {
		return
	}
	r := &responder{s: b.s, i: i}
	if err := b.ackFirst(ctx, r, i); err != nil {
		// 40060: answered already, so this is a redelivery (a resumed gateway replaying
		// it); 10062: too late, and the person was told the interaction failed.
		b.log.Warn("discord: interaction not acknowledged; ignoring it", "interaction", i.ID, "err", err)
		return
	}
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
		b.onClick(ctx, r, w, u, i)
	case discordgo.InteractionModalSubmit:
		req, err := ParseFeedback(i.ModalSubmitData(), actor.UserID)
		if err != nil {
			b.log.Warn("discord: bad feedback submit", "err", err)
			r.ephemeral(ctx, "That dialog is not one I understand: "+err.Error())
			return
		}
		// The proposal message is edited when the daemon's decision comes back.
		b.opt.Relay.OnFeedback(ctx, Platform, w, u, bots.Ref{ProposalID: req.ProposalID, Hash: req.Hash}, req.Feedback)
	case discordgo.InteractionApplicationCommand:
		b.onCommand(ctx, r, w, u, i.ApplicationCommandData())
	}
}

// ackFirst acknowledges an interaction at once: a deferred update for a decision click
// or a modal submit (the message is edited when the decision comes back), a deferred
// ephemeral answer for /agent. A Feedback… click and a button that does not parse are
// left to their handlers, whose first answer is the modal or the refusal.
func (b *Bot) ackFirst(ctx context.Context, r *responder, i *discordgo.Interaction) error {
	switch i.Type {
	case discordgo.InteractionMessageComponent:
		id, err := ParseCustomID(i.MessageComponentData().CustomID)
		if err != nil || id.Action == ActionFeedback {
			return nil
		}
		return r.respond(ctx, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseDeferredMessageUpdate})
	case discordgo.InteractionModalSubmit:
		return r.respond(ctx, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseDeferredMessageUpdate})
	case discordgo.InteractionApplicationCommand:
		return r.respond(ctx, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseDeferredChannelMessageWithSource,
			Data: &discordgo.InteractionResponseData{Flags: discordgo.MessageFlagsEphemeral | noEmbeds}})
	}
	return nil
}

func (b *Bot) onClick(ctx context.Context, r *responder, w bots.Where, u bots.User, i *discordgo.Interaction) {
	id, err := ParseCustomID(i.MessageComponentData().CustomID)
	switch {
	case err == nil && id.Action != ActionFeedbackModal:
		c := bots.Click{Platform: Platform, Where: w, User: u, Action: string(id.Action),
			Ref: bots.Ref{AgentID: id.AgentID, ProposalID: id.ProposalID, Count: id.N, Hash: id.Hash}, ID: i.ID}
		if i.Message != nil {
			// In the form Post returns ids in (CHANNEL/MESSAGE), which the relay stored, so
			// it can check the button names the proposal its message shows.
			c.Message = i.ChannelID + "/" + i.Message.ID
		}
		// A decision was acknowledged already (ackFirst); its message is edited when the
		// decision event comes back from the daemon. A feedback click's modal must be its
		// first answer, so nothing was deferred for it: that is done once the relay is.
		b.opt.Relay.OnClick(ctx, c)
		if id.Action == ActionFeedback {
			r.deferUpdate(ctx)
		}
	default:
		b.refuseButton(ctx, r, u, err)
	}
}

// refuseButton answers a click on a button that is no proposal's: its custom id does not
// parse (err), or names no action on a proposal.
func (b *Bot) refuseButton(ctx context.Context, r *responder, u bots.User, err error) {
	if err == nil {
		r.ephemeral(ctx, "That is not a button on a proposal.")
		return
	}
	var ce *CustomIDError
	if errors.As(err, &ce) {
		b.log.Warn("discord: refused a button", "user", u.ID, "err", err)
	}
	note := "This button is not one I can act on. Reply in the thread instead: y, n, or feedback."
	if strings.Contains(err.Error(), "older agentd") {
		note = "This button is from an older version of agentd and decides nothing now. Use the buttons on the newest proposal in this thread, or reply y, n, or feedback."
	}
	r.ephemeral(ctx, note)
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
	case SubRewind:
		text += " " + cmd.Agent + cmd.Rewind
	case SubTeam:
		if cmd.Stop != "" {
			text += " stop " + cmd.Stop
			break
		}
		text += " " + cmd.File + " " + cmd.Task
	default:
		text += " " + cmd.Agent
	}
	// Deferred already (ackFirst): starting a run posts and creates threads, which can
	// take longer than the 3 s Discord allows for the first answer.
	out := b.opt.Relay.OnCommand(ctx, Platform, w, u, strings.TrimSpace(text))
	if out == "" {
		out = "Done."
	}
	// The relay's answers are written as markdown; only mentions and invisible characters
	// are broken.
	if err := r.editOriginal(ctx, fitContent(mentionBreaker.Replace(display.Escape(out, display.Text)), out, "answer.txt")); err != nil {
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
	// thinking: the first answer was a deferred message ("thinking…") not yet replaced.
	thinking bool
}

var errResponded = errors.New("discord: the interaction was answered already")

// respond sends the interaction's first answer. A plain one (every acknowledgement) goes
// straight to Discord rather than through discordgo's rate limiter, which a global 429
// on channel posts would hold: interaction callbacks are not under the global limit, and
// must arrive within 3 s.
func (r *responder) respond(ctx context.Context, resp *discordgo.InteractionResponse) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.responded {
		return errResponded
	}
	r.responded = true
	r.thinking = resp.Type == discordgo.InteractionResponseDeferredChannelMessageWithSource
	if resp.Data != nil && len(resp.Data.Files) > 0 {
		return r.s.InteractionRespond(r.i, resp, discordgo.WithContext(ctx))
	}
	return postJSON(ctx, r.s, discordgo.EndpointInteractionResponse(r.i.ID, r.i.Token), resp)
}

// postJSON POSTs body to url with the session's HTTP client, outside its rate limiter.
func postJSON(ctx context.Context, s *discordgo.Session, url string, body any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", s.UserAgent)
	resp, err := s.Client.Do(req)
	if err != nil {
		return fmt.Errorf("discord: answering an interaction: %w", err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 == 2 {
		return nil
	}
	re := &discordgo.RESTError{Request: req, Response: resp, ResponseBody: out}
	var msg discordgo.APIErrorMessage
	if json.Unmarshal(out, &msg) == nil && msg.Code != 0 {
		re.Message = &msg
	}
	return re
}

// deferUpdate acknowledges a click or submit without changing the message, unless it
// was answered already.
func (r *responder) deferUpdate(ctx context.Context) {
	r.respond(ctx, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseDeferredMessageUpdate})
}

// ephemeral shows text to the person who acted alone: as the first answer, in place of
// a deferred "thinking…" one, or as a follow-up.
func (r *responder) ephemeral(ctx context.Context, text string) error {
	m := fitContent(Escape(text), text, "note.txt")
	r.mu.Lock()
	thinking := r.thinking
	r.mu.Unlock()
	if thinking {
		return r.editOriginal(ctx, m)
	}
	err := r.respond(ctx, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseChannelMessageWithSource,
		Data: &discordgo.InteractionResponseData{Content: m.Content, Files: m.Files, Flags: discordgo.MessageFlagsEphemeral | noEmbeds,
			AllowedMentions: noMentions()}})
	if !errors.Is(err, errResponded) {
		return err
	}
	m = fitContent(Escape(text), text, "note.txt") // the files' readers are fresh
	_, err = r.s.FollowupMessageCreate(r.i, true, &discordgo.WebhookParams{Content: m.Content, Files: m.Files,
		Flags: discordgo.MessageFlagsEphemeral | noEmbeds, AllowedMentions: noMentions()}, discordgo.WithContext(ctx))
	return err
}

// originalEdit is an edit of an interaction's response; discordgo's WebhookEdit has no
// flags, and the answer must keep SUPPRESS_EMBEDS.
type originalEdit struct {
	Content         string                            `json:"content"`
	AllowedMentions *discordgo.MessageAllowedMentions `json:"allowed_mentions"`
	Flags           discordgo.MessageFlags            `json:"flags"`
	Attachments     []*discordgo.MessageAttachment    `json:"attachments"`
}

// editOriginal replaces the interaction's (deferred) response with m.
func (r *responder) editOriginal(ctx context.Context, m Message) error {
	r.mu.Lock()
	r.thinking = false
	r.mu.Unlock()
	url := discordgo.EndpointWebhookMessage(r.i.AppID, r.i.Token, "@original")
	body := originalEdit{Content: m.Content, AllowedMentions: noMentions(), Flags: discordgo.MessageFlagsEphemeral | noEmbeds,
		Attachments: []*discordgo.MessageAttachment{}}
	var err error
	if len(m.Files) > 0 {
		ct, data, merr := discordgo.MultipartBodyWithJSON(body, m.Files)
		if merr != nil {
			return merr
		}
		_, err = r.s.RequestRaw(http.MethodPatch, url, ct, data, discordgo.EndpointWebhookToken("", ""), 0, discordgo.WithContext(ctx))
	} else {
		_, err = r.s.RequestWithBucketID(http.MethodPatch, url, body, discordgo.EndpointWebhookToken("", ""), discordgo.WithContext(ctx))
	}
	return err
}
