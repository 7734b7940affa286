// Package slack is agentd's Slack front end: a thin bots.Adapter over slack-go's Socket
// Mode client (a bot token and an app-level token; no public URL needed).
//
// It turns Socket Mode envelopes — mentions, direct messages, thread replies, edits
// (message_changed with "edited"), button clicks, the feedback dialog and /agent — into
// calls on the shared relay (package
// bots), and renders the relay's messages as Block Kit. Every envelope is acked before
// any other work (Slack wants it within 3 s); /agent is answered through the command's
// response_url. Messages are cut to Slack's limits after escaping, saying so, with the
// full text attached; link and media previews are always off. manifest.yaml creates the
// Slack app in one step; fakeslack is a loopback fake of Slack, as strict as Slack, for
// tests.
package slack

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/bots"
	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
	"github.com/slack-go/slack/socketmode"
)

// Platform is the name decisions made in Slack carry as their source.
const Platform = "slack"

// Options configure a Bot.
type Options struct {
	// BotToken (xoxb-…) calls the Web API; AppToken (xapp-…) opens Socket Mode.
	BotToken string
	AppToken string
	// APIURL is the Web API's base URL, ending in /; "" is Slack's.
	APIURL string
	Relay  bots.Handler
	Log    *slog.Logger
	// PingInterval is how long the connection may go without a ping from Slack before
	// it counts as dead and is reopened; 0 is 30s.
	PingInterval time.Duration
	// Backoff is the wait before reconnect attempt n (from 1); nil doubles from 1s to 2m.
	Backoff func(n int) time.Duration
	// MaxText is the longest result posted inline; 0 is 2500 characters.
	MaxText int
	// OnConnection, if set, is told each time the Socket Mode connection goes up or
	// down (metrics).
	OnConnection func(up bool)
}

// Bot is the Slack adapter. Create it with New, add it to the relay, then Run it.
type Bot struct {
	opt Options
	api *slack.Client
	log *slog.Logger
	// http posts answers to slash commands' response_url.
	http *http.Client

	self atomic.Pointer[slack.AuthTestResponse]

	groups bots.Cache[[]string] // user group → its members
	names  bots.Cache[string]   // user id → display name (names.go)

	conn *bots.Connection

	// handlers are the goroutines dispatch starts, one per envelope; runSocket waits for
	// them after canceling their context, so none outlives Run.
	handlers sync.WaitGroup
}

var _ bots.Adapter = (*Bot)(nil)

// New checks the tokens' form and returns a Bot. Tokens are never logged.
func New(opt Options) (*Bot, error) {
	if !strings.HasPrefix(opt.BotToken, "xoxb-") {
		return nil, errors.New("slack: the bot token must be a bot token (xoxb-…)")
	}
	if !strings.HasPrefix(opt.AppToken, "xapp-") {
		return nil, errors.New("slack: the app token must be an app-level token (xapp-…) with connections:write")
	}
	opt.Log, opt.Backoff = bots.LogOr(opt.Log), bots.BackoffOr(opt.Backoff)
	opt.PingInterval, opt.MaxText = cmp.Or(opt.PingInterval, 30*time.Second), cmp.Or(opt.MaxText, 2500)
	// OptionRetry waits out a 429's Retry-After and tries again, up to 3 times, inside
	// the call: the relay's outbox (one queue per thread) keeps posts in order meanwhile,
	// and acks never wait on it (they go over the socket).
	o := []slack.Option{slack.OptionAppLevelToken(opt.AppToken), slack.OptionRetry(3)}
	if opt.APIURL != "" {
		o = append(o, slack.OptionAPIURL(opt.APIURL))
	}
	return &Bot{opt: opt, api: slack.New(opt.BotToken, o...), log: opt.Log, http: &http.Client{Timeout: 30 * time.Second},
		conn: bots.NewConnection(Platform, opt.OnConnection)}, nil
}

// Platform implements bots.Adapter.
func (b *Bot) Platform() string { return Platform }

// Status reports the connection's state, for agentctl status.
func (b *Bot) Status() bots.Status { return b.conn.Status() }

// Run keeps the bot connected until ctx ends: auth.test, then Socket Mode, reopened
// with backoff whenever it drops. It returns only when ctx ends.
func (b *Bot) Run(ctx context.Context) error {
	b.conn.Keep(ctx, b.opt.Backoff, func(ctx context.Context) error {
		self, err := b.api.AuthTestContext(ctx)
		if err != nil {
			b.log.Error("slack: auth.test failed; retrying", "err", err)
			return fmt.Errorf("auth.test: %w", err)
		}
		b.self.Store(self)
		b.log.Info("slack: authenticated", "team", self.TeamID, "bot_user", self.UserID)
		return nil
	}, func(ctx context.Context) error {
		err := b.runSocket(ctx)
		if ctx.Err() == nil {
			b.log.Warn("slack: socket mode stopped; reconnecting", "err", err)
		}
		return err
	})
	return nil
}

// runSocket runs one Socket Mode client until it gives up (bad auth) or ctx ends; the
// client itself reopens dropped connections.
func (b *Bot) runSocket(ctx context.Context) error {
	sm := socketmode.New(b.api, socketmode.OptionPingInterval(b.opt.PingInterval), socketmode.OptionLog(quietLog{b.log}))
	defer b.handlers.Wait() // after cancel (deferred below, so run first) ends them
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- sm.RunContext(ctx) }()
	for {
		select {
		case err := <-done:
			return err
		case ev := <-sm.Events:
			b.dispatch(ctx, sm, ev)
		}
	}
}

// quietLog takes slack-go's own log lines (debug is off, so only its rare notices) to slog.
type quietLog struct{ log *slog.Logger }

func (q quietLog) Output(_ int, s string) error {
	q.log.Debug("slack-go: " + strings.TrimSpace(s))
	return nil
}

func (b *Bot) dispatch(ctx context.Context, sm *socketmode.Client, ev socketmode.Event) {
	switch ev.Type {
	case socketmode.EventTypeConnecting:
		// The client reconnects by itself after a drop, announcing only this: until
		// Connected follows, the bot is down.
		b.conn.Set(bots.StateConnecting, 0, nil)
		b.log.Debug("slack: connecting")
	case socketmode.EventTypeConnected:
		b.conn.Set(bots.StateConnected, 0, nil)
		b.log.Info("slack: connected")
	case socketmode.EventTypeConnectionError:
		b.conn.Set(bots.StateReconnecting, 1, errors.New("socket mode connection failed"))
		b.log.Warn("slack: connection failed; retrying")
	case socketmode.EventTypeDisconnect:
		b.conn.Set(bots.StateReconnecting, 1, errors.New("disconnected"))
	case socketmode.EventTypeEventsAPI:
		b.ack(ctx, sm, ev.Request, nil)
		if e, ok := ev.Data.(slackevents.EventsAPIEvent); ok {
			b.handlers.Go(func() { b.onEvent(ctx, e) })
		}
	case socketmode.EventTypeInteractive:
		b.ack(ctx, sm, ev.Request, nil) // closes a submitted dialog; clicks need nothing back
		if cb, ok := ev.Data.(slack.InteractionCallback); ok {
			b.handlers.Go(func() { b.onInteraction(ctx, cb) })
		}
	case socketmode.EventTypeSlashCommand:
		// Acked at once and empty: Slack wants the ack within 3 s, and the relay's answer
		// may wait on Web API calls (a 429 on /agent run's thread). The answer follows
		// through the command's response_url.
		b.ack(ctx, sm, ev.Request, nil)
		cmd, ok := ev.Data.(slack.SlashCommand)
		if !ok {
			return
		}
		b.handlers.Go(func() {
			w := b.where(cmd.TeamID, cmd.ChannelID, "")
			if text := b.opt.Relay.OnCommand(ctx, Platform, w, bots.User{ID: cmd.UserID, Name: cmd.UserName}, cmd.Text); text != "" {
				b.answer(ctx, cmd, text)
			}
		})
	}
}

// answer shows a slash command's answer to the person who typed it, through the
// command's response_url (ephemeral), or chat.postEphemeral should that fail.
func (b *Bot) answer(ctx context.Context, cmd slack.SlashCommand, text string) {
	escaped, cut := bots.Fit(escape(text), maxText-100, slackLen)
	if cut {
		escaped += "\n_truncated — ask for less, like /agent status NAME_"
	}
	no := false
	msg := &slack.WebhookMessage{ResponseType: slack.ResponseTypeEphemeral, Text: escaped, UnfurlLinks: &no, UnfurlMedia: &no}
	err := slack.PostWebhookCustomHTTPContext(ctx, cmd.ResponseURL, b.http, msg)
	if err == nil || ctx.Err() != nil {
		return
	}
	b.log.Warn("slack: answering a slash command through its response_url; posting it ephemeral instead", "err", err)
	if err := b.ephemeral(ctx, cmd.ChannelID, "", cmd.UserID, escaped); err != nil {
		b.log.Error("slack: answering a slash command", "err", err)
	}
}

// ack acknowledges an envelope. It gives up when ctx ends: the client reads acks only
// while it runs, and an ack nobody reads would block its goroutine for good.
func (b *Bot) ack(ctx context.Context, sm *socketmode.Client, req *socketmode.Request, payload any) {
	if req == nil {
		return
	}
	if err := sm.AckCtx(ctx, req.EnvelopeID, payload); err != nil && ctx.Err() == nil {
		b.log.Warn("slack: acknowledging an envelope", "err", err)
	}
}

func (b *Bot) where(team, channel, thread string) bots.Where {
	return bots.Where{Team: team, Channel: channel, Thread: thread, DM: strings.HasPrefix(channel, "D")}
}

func (b *Bot) botUser() string {
	if s := b.self.Load(); s != nil {
		return s.UserID
	}
	return ""
}

var mentionRE = regexp.MustCompile(`<@([A-Z0-9]+)(\|[^>]*)?>`)

// stripMention removes mentions of the bot and reports whether there was one.
func (b *Bot) stripMention(text string) (string, bool) {
	out, found := bots.StripMention(mentionRE, b.botUser(), text)
	return unescape(out), found
}

// unescape undoes Slack's escaping of typed text.
func unescape(s string) string {
	return strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&").Replace(s)
}

func (b *Bot) onEvent(ctx context.Context, e slackevents.EventsAPIEvent) {
	switch ev := e.InnerEvent.Data.(type) {
	case *slackevents.AppMentionEvent:
		if ev.BotID != "" || ev.User == "" || ev.User == b.botUser() {
			return
		}
		text, _ := b.stripMention(ev.Text)
		b.opt.Relay.OnMessage(ctx, bots.Incoming{Platform: Platform, Where: b.where(e.TeamID, ev.Channel, ev.ThreadTimeStamp),
			User: bots.User{ID: ev.User, Name: b.userName(ctx, ev.User)}, Text: text, ID: ev.TimeStamp, Mention: true})
	case *slackevents.MessageEvent:
		if ev.SubType == "message_changed" {
			b.onEdit(ctx, e.TeamID, ev)
			return
		}
		// Joins, bot posts (this bot's own included) and other subtypes are not people
		// talking to the agent; a reply also sent to the channel is a reply.
		if !personSays(ev) || ev.BotID != "" || ev.User == "" || ev.User == b.botUser() {
			return
		}
		text, mentioned := b.stripMention(ev.Text)
		dm := ev.ChannelType == "im"
		if mentioned && !dm {
			return // the app_mention event carries it
		}
		w := b.where(e.TeamID, ev.Channel, ev.ThreadTimeStamp)
		w.DM = dm
		b.opt.Relay.OnMessage(ctx, bots.Incoming{Platform: Platform, Where: w, User: bots.User{ID: ev.User, Name: b.userName(ctx, ev.User)}, Text: text, ID: ev.TimeStamp, Mention: mentioned})
	}
}

// onEdit passes a person's edit of their message to the relay, which answers that edits
// are not read. Slack also sends message_changed for changes nobody typed (a link's
// preview, a reply added under the message): only one with "edited" is an edit.
func (b *Bot) onEdit(ctx context.Context, team string, ev *slackevents.MessageEvent) {
	m := ev.Message
	if m == nil || m.Edited == nil || m.BotID != "" || m.User == "" || m.User == b.botUser() {
		return
	}
	text, mentioned := b.stripMention(m.Text)
	// A message that has replies carries its own ts as thread_ts: the thread it starts.
	w := b.where(team, ev.Channel, m.ThreadTimestamp)
	w.DM = ev.ChannelType == "im"
	b.opt.Relay.OnMessage(ctx, bots.Incoming{Platform: Platform, Where: w, User: bots.User{ID: m.User, Name: b.userName(ctx, m.User)},
		Text: text, ID: m.Timestamp, Mention: mentioned, Edited: true})
}

// personSays reports whether ev is something a person wrote: a plain message, or a
// thread reply they also sent to the channel (subtype thread_broadcast, with thread_ts).
func personSays(ev *slackevents.MessageEvent) bool {
	return ev.SubType == "" || ev.SubType == "thread_broadcast" && ev.ThreadTimeStamp != ""
}

func (b *Bot) onInteraction(ctx context.Context, cb slack.InteractionCallback) {
	u := bots.User{ID: cb.User.ID, Name: cb.User.Name}
	switch cb.Type {
	case slack.InteractionTypeBlockActions:
		thread := cb.Container.ThreadTs
		if thread == "" {
			thread = cb.Message.ThreadTimestamp
		}
		w := b.where(cb.Team.ID, cb.Channel.ID, thread)
		msg := cb.Container.MessageTs
		if msg == "" {
			msg = cb.Message.Timestamp
		}
		for _, a := range cb.ActionCallback.BlockActions {
			action, ok := strings.CutPrefix(a.ActionID, actionPrefix)
			if !ok {
				continue
			}
			ref, err := bots.ParseRef(a.Value)
			if err != nil {
				b.log.Warn("slack: bad button value", "err", err)
				continue
			}
			// The trigger carries where the click was, for the dialog's submission.
			trigger := strings.Join([]string{cb.TriggerID, w.Team, w.Channel, w.Thread}, "\n")
			// A redelivered click carries the same action_ts and message: the same ID.
			b.opt.Relay.OnClick(ctx, bots.Click{Platform: Platform, Where: w, User: u, Action: action, Ref: ref, Trigger: trigger,
				ID: a.ActionTs + "/" + msg, Message: msg})
		}
	case slack.InteractionTypeViewSubmission:
		if cb.View.CallbackID != feedbackCallback || cb.View.State == nil {
			return
		}
		meta := strings.Split(cb.View.PrivateMetadata, "\n")
		if len(meta) != 4 {
			return
		}
		ref, err := bots.ParseRef(meta[0])
		if err != nil {
			return
		}
		text := cb.View.State.Values[feedbackBlock][feedbackInput].Value
		b.opt.Relay.OnFeedback(ctx, Platform, b.where(meta[1], meta[2], meta[3]), u, ref, text)
	}
}

// classify marks errors that retrying cannot fix (Slack said no: channel_not_found,
// not_in_channel, a 4xx) so the relay's outbox drops the post instead of retrying.
func classify(err error) error {
	var se slack.SlackErrorResponse
	var sc slack.StatusCodeError
	switch {
	case errors.As(err, &se):
		return bots.Permanent(err)
	case errors.As(err, &sc):
		return bots.PermanentStatus(err, sc.Code)
	}
	return err
}

// StartThread implements bots.Adapter: a thread under anchor, or under a new message.
func (b *Bot) StartThread(ctx context.Context, channel, anchor, title string) (string, error) {
	if anchor != "" {
		return anchor, nil
	}
	return b.Post(ctx, channel, "", bots.FormatNote(title))
}

// noPreviews turns off link and media previews: Slack would fetch a URL in a proposal
// (…/leak?d=<secret>) the moment it is shown, before anyone approved anything.
var noPreviews = []slack.MsgOption{slack.MsgOptionDisableLinkUnfurl(), slack.MsgOptionDisableMediaUnfurl()}

// messageOptions are m rendered (its summary and its blocks) with previews off; cut
// reports that the blocks were cut to Slack's limits.
func messageOptions(m bots.Message) (opts []slack.MsgOption, cut bool) {
	blocks, cut := render(m)
	return append([]slack.MsgOption{slack.MsgOptionText(summary(m), false), slack.MsgOptionBlocks(blocks...)}, noPreviews...), cut
}

// Post implements bots.Adapter. A message cut to Slack's limits says so, and the full
// text follows as a file in the same thread.
func (b *Bot) Post(ctx context.Context, channel, thread string, m bots.Message) (string, error) {
	opts, cut := messageOptions(m)
	if thread != "" {
		opts = append(opts, slack.MsgOptionTS(thread))
	}
	_, ts, err := b.api.PostMessageContext(ctx, channel, opts...)
	if err != nil {
		return "", classify(fmt.Errorf("slack: chat.postMessage: %w", err))
	}
	if cut {
		if thread == "" {
			thread = ts
		}
		// Not returned: the message is up, and the outbox would post it again.
		if err := b.PostFile(ctx, channel, thread, "full-text.txt", m.PlainText(), "The full text of the message above."); err != nil {
			b.log.Error("slack: attaching the full text of a cut message", "err", err)
		}
	}
	return ts, nil
}

// Update implements bots.Adapter. The full text of a cut message was attached by Post.
func (b *Bot) Update(ctx context.Context, channel, id string, m bots.Message) error {
	opts, _ := messageOptions(m)
	if _, _, _, err := b.api.UpdateMessageContext(ctx, channel, id, opts...); err != nil {
		return classify(fmt.Errorf("slack: chat.update: %w", err))
	}
	return nil
}

// PostFile implements bots.Adapter with files.getUploadURLExternal, the upload and
// files.completeUploadExternal.
func (b *Bot) PostFile(ctx context.Context, channel, thread, name, content, comment string) error {
	_, err := b.api.UploadFileContext(ctx, slack.UploadFileParameters{
		Filename: name, Title: name, Content: content, FileSize: len(content),
		Channel: channel, ThreadTimestamp: thread, InitialComment: comment,
	})
	if err != nil {
		return classify(fmt.Errorf("slack: file upload: %w", err))
	}
	return nil
}

// Ephemeral implements bots.Adapter.
func (b *Bot) Ephemeral(ctx context.Context, channel, thread, user, text string) error {
	escaped, _ := bots.Fit(escape(text), maxText, slackLen)
	return b.ephemeral(ctx, channel, thread, user, escaped)
}

// ephemeral posts escaped text to user alone.
func (b *Bot) ephemeral(ctx context.Context, channel, thread, user, escaped string) error {
	opts := append([]slack.MsgOption{slack.MsgOptionText(escaped, false)}, noPreviews...)
	if thread != "" {
		opts = append(opts, slack.MsgOptionTS(thread))
	}
	if _, err := b.api.PostEphemeralContext(ctx, channel, user, opts...); err != nil {
		return fmt.Errorf("slack: chat.postEphemeral: %w", err)
	}
	return nil
}

// OpenFeedback implements bots.Adapter with a modal (views.open).
func (b *Bot) OpenFeedback(ctx context.Context, trigger string, ref bots.Ref, prompt string) error {
	parts := strings.Split(trigger, "\n")
	if len(parts) != 4 || parts[0] == "" {
		return errors.New("slack: no trigger to open a dialog with")
	}
	input := slack.NewPlainTextInputBlockElement(slack.NewTextBlockObject(slack.PlainTextType, "What should the agent do instead?", false, false), feedbackInput)
	input.Multiline = true
	input.MaxLength = feedbackMaxLength
	view := slack.ModalViewRequest{
		Type:            slack.VTModal,
		CallbackID:      feedbackCallback,
		Title:           slack.NewTextBlockObject(slack.PlainTextType, "Feedback", false, false),
		Submit:          slack.NewTextBlockObject(slack.PlainTextType, "Send", false, false),
		Close:           slack.NewTextBlockObject(slack.PlainTextType, "Cancel", false, false),
		PrivateMetadata: strings.Join(append([]string{bots.EncodeRef(ref)}, parts[1:]...), "\n"),
		Blocks: slack.Blocks{BlockSet: []slack.Block{
			slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, fitSection(prompt), false, false), nil, nil),
			slack.NewInputBlock(feedbackBlock, slack.NewTextBlockObject(slack.PlainTextType, "Feedback", false, false), nil, input),
		}},
	}
	if _, err := b.api.OpenViewContext(ctx, parts[0], view); err != nil {
		return fmt.Errorf("slack: views.open: %w", err)
	}
	return nil
}

// feedbackMaxLength is the feedback input's max_length, in characters: at most 4 bytes
// each in UTF-8, so no feedback Slack lets through exceeds the daemon's byte cap; and
// within Slack's own maximum for a plain_text_input (3000).
const feedbackMaxLength = min(api.MaxTextBytes/utf8.UTFMax, 3000)

// groupTTL is how long a user group's members are trusted before asking Slack again.
const groupTTL = time.Minute

// InGroup implements bots.Adapter with usergroups.users.list, cached for a minute.
func (b *Bot) InGroup(ctx context.Context, user, group string) (bool, error) {
	users, ok := b.groups.Get(group, bots.For[[]string](groupTTL))
	if !ok {
		var err error
		if users, err = b.api.GetUserGroupMembersContext(ctx, group); err != nil {
			return false, fmt.Errorf("slack: usergroups.users.list: %w", err)
		}
		b.groups.Put(group, users)
	}
	return slices.Contains(users, user), nil
}

// MaxText implements bots.Adapter.
func (b *Bot) MaxText() int { return b.opt.MaxText }

// Before implements bots.Adapter: message ts are ordered as decimal numbers.
func (b *Bot) Before(x, y string) bool { return bots.DecimalBefore(x, y) }
