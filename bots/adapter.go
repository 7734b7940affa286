package bots

import (
	"context"
	"log/slog"
	"time"

	"github.com/agentd/agentd/internal/backoff"
)

// Adapter is one chat platform as the relay sees it. The relay calls it to post; the
// adapter calls the relay's On* methods with what people do. Implementations must be
// safe for concurrent use.
//
// Lifecycle: construct the adapter, relay.Add(adapter), then run both; the adapter
// reconnects on its own and never stops the relay.
type Adapter interface {
	// Platform names the platform: "slack", "discord". It is the source of decisions
	// made there and the platform of its bindings.
	Platform() string
	// StartThread returns the thread a new run is posted in: under anchor (the message
	// that asked for the run) when given, else under a new root message with title.
	StartThread(ctx context.Context, channel, anchor, title string) (thread string, err error)
	// Post posts msg in a thread ("" posts at the channel's top level) and returns the
	// message's id, for Update.
	Post(ctx context.Context, channel, thread string, msg Message) (id string, err error)
	// Update replaces a posted message (buttons included).
	Update(ctx context.Context, channel, id string, msg Message) error
	// PostFile uploads content as a file named name into the thread, with a comment.
	PostFile(ctx context.Context, channel, thread, name, content, comment string) error
	// Ephemeral shows text to user alone.
	Ephemeral(ctx context.Context, channel, thread, user, text string) error
	// OpenFeedback opens a dialog asking for feedback on a proposal. trigger is the
	// click's Trigger; the dialog's submission comes back as OnFeedback with ref.
	OpenFeedback(ctx context.Context, trigger string, ref Ref, prompt string) error
	// InGroup reports whether user belongs to group (a Slack user group, a Discord role).
	InGroup(ctx context.Context, user, group string) (bool, error)
	// MaxText is the longest text posted inline; longer results go as files.
	MaxText() int
	// Before reports whether the message with id a was written before the one with id b,
	// by the platform's own ordering (Slack: message ts; Discord: snowflakes). A typed
	// reply is bound to the proposal that was the latest shown when it was written.
	Before(a, b string) bool
}

// Message is what the relay posts, in a platform-neutral form; adapters render and
// escape it (Slack Block Kit, Discord embeds and components).
type Message struct {
	// Summary is a one-line plain-text version, for notifications and fallbacks.
	Summary string
	// Parts are shown in order.
	Parts []Part
	// Buttons are shown under the parts; none once the proposal is decided.
	Buttons []Button
}

// Part is one piece of a message. Spans are prose; Code is shown preformatted. Both are
// plain text: the adapter escapes them.
type Part struct {
	Spans []Span
	Code  string
	// Quote shows the spans as a quotation (the agent's own words).
	Quote bool
}

// Span is a run of text, bold or not, or a mention of a platform user.
type Span struct {
	Text string
	Bold bool
	// User, when set, is a platform user id shown as a mention instead of Text.
	User string
}

// Button is one button on a proposal. Action is one of the Action* constants.
type Button struct {
	Action string
	Label  string
	Ref    Ref
	// Count is the approval count for ActionApproveN.
	Count int
	// Style is "primary", "danger" or "".
	Style string
}

// Button actions.
const (
	ActionApprove  = "approve"
	ActionApproveN = "approve_n"
	ActionDeny     = "deny"
	ActionFeedback = "feedback"
)

// Ref names a proposal of an agent; buttons and dialogs carry it.
type Ref struct {
	AgentID    string
	ProposalID string
	// Count is the approval count, for ActionApproveN.
	Count int
	// Hash is a prefix of the shown proposal's client.Proposal.Hash (HashLen hex
	// characters); a decision made from the button carries it, and the daemon refuses it
	// when it is not the proposal's. Empty on buttons posted before it existed.
	Hash string
}

// HashLen is how many hex characters of a proposal's hash a button carries.
const HashLen = 16

// User is the person (or bot) behind a chat action.
type User struct {
	ID   string
	Name string
	// Bot is true for messages from bots, this one included; the relay ignores them.
	Bot bool
}

// Where is a place in chat.
type Where struct {
	Team    string
	Channel string
	// Thread is the thread the action happened in ("" at a channel's top level).
	Thread string
	// DM is true for a direct message channel with the bot.
	DM bool
}

// Handler is what a bot hands the chat actions it receives to: *Relay, or what a test
// puts before it.
type Handler interface {
	OnMessage(ctx context.Context, in Incoming)
	OnClick(ctx context.Context, c Click)
	OnFeedback(ctx context.Context, platform string, w Where, u User, ref Ref, text string)
	OnCommand(ctx context.Context, platform string, w Where, u User, text string) string
}

var _ Handler = (*Relay)(nil)

// LogOr is log, or a logger that discards when log is nil.
func LogOr(log *slog.Logger) *slog.Logger {
	if log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return log
}

// BackoffOr is next, or when nil the wait before a bot's reconnect attempt: from a
// second, doubling, to two minutes.
func BackoffOr(next func(attempt int) time.Duration) func(attempt int) time.Duration {
	if next == nil {
		return backoff.Policy{Base: time.Second, Max: 2 * time.Minute}.Next
	}
	return next
}
